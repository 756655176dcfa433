package snapshot

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// A kernel log larger than check reads is recorded as its newest whole records, never a record
// cut in two nor a continuation line without its record.
func TestNewestRecords(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		b.WriteString("6,")
		b.WriteString(strings.Repeat("1", 1+i%3))
		b.WriteString(",100,-;mlx5_core 0000:3b:00.0: Link up\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n")
	}
	log := []byte(b.String())
	if got, dropped := newestRecords(log, len(log)); dropped != 0 || len(got) != len(log) {
		t.Fatalf("a log that fits lost %d bytes", dropped)
	}
	for _, limit := range []int{len(log) - 1, len(log) / 2, 1000, 97} {
		got, dropped := newestRecords(log, limit)
		if len(got) > limit || dropped+len(got) != len(log) || string(log[dropped:]) != string(got) {
			t.Fatalf("limit %d: kept %d, dropped %d", limit, len(got), dropped)
		}
		if len(got) > 0 && got[0] == ' ' {
			t.Fatalf("limit %d: starts with a continuation line", limit)
		}
		recs, skipped := kmsg.Parse(got)
		if skipped != 0 || len(recs) == 0 && limit > 200 {
			t.Errorf("limit %d: %d records, %d lines skipped", limit, len(recs), skipped)
		}
		for _, r := range recs {
			if r.Text != "mlx5_core 0000:3b:00.0: Link up" {
				t.Errorf("limit %d: record %q", limit, r.Text)
			}
		}
	}
}
