package kevent

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// After the embedded files' pages are dropped, the table still decodes and classifies: the
// pages come back from the executable with the same bytes.
func TestDropEmbeddedPages(t *testing.T) {
	before := len(sigMlxScan) + len(sigVendorsScan)
	tb, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	tb.Prepare()
	DropEmbeddedPages()
	recs := []kmsg.Record{{Level: 3, Text: "mlx5_core 0000:3b:00.0: poll_health:800:(pid 0): Fatal error 5 detected"},
		{Level: 3, Text: "hfi1 0000:00:05.0: Could not allocate unit ID: error 1"}}
	evs := tb.Classify(recs, nil)
	if len(evs) != 2 || evs[0].Sig == nil || evs[0].Sig.ID != "mlx5-fatal" || evs[1].Sig == nil {
		t.Fatalf("after dropping the pages: %+v", evs)
	}
	if after := len(sigMlxScan) + len(sigVendorsScan); after != before || sigMlxScan[0] != '{' {
		t.Errorf("the embedded text changed")
	}
	if _, err := Default(); err != nil {
		t.Errorf("the table no longer loads: %v", err)
	}
}
