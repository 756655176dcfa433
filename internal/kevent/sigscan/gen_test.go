package sigscan

import (
	"testing"
	"testing/fstest"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
)

// A generated file that defines drivers and holds no entry yet (the generator loads one before
// it has any) must load: the table refuses "signatures": null.
func TestGeneratedDriversOnlyLoads(t *testing.T) {
	var d *kevent.Driver
	for _, sd := range SourceDrivers {
		if sd.Family == "vendors" && sd.Define != nil {
			d = sd.Define
			break
		}
	}
	if d == nil {
		t.Fatal("no vendors driver that the generated file defines")
	}
	b, err := (&Generated{Family: "vendors", Drivers: []kevent.Driver{*d}}).JSON()
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kevent.Load(fstest.MapFS{"signatures/vendors-scan.json": &fstest.MapFile{Data: b}})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if tb.Driver(d.Name) == nil {
		t.Errorf("driver %s not loaded", d.Name)
	}
}
