package sigscan

import (
	"strings"
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
	b, err := (&Generated{Family: "vendors", Releases: []string{"6.12.19"}, Drivers: []kevent.Driver{*d}}).JSON()
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

// A generated file's comment names every tree it was read from with its citation, and a
// release the generator cannot cite is refused rather than written uncited.
func TestGeneratedCitesItsTrees(t *testing.T) {
	b, err := (&Generated{Family: "mlx", Releases: []string{"4.19.304", "MLNX_OFED-24.07"}}).JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4.19.304 (" + Trees["4.19.304"] + ")", "MLNX_OFED-24.07 (" + Trees["MLNX_OFED-24.07"] + ")"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("comment does not name %q:\n%s", want, b)
		}
	}
	if _, err := (&Generated{Family: "mlx", Releases: []string{"6.13"}}).JSON(); err == nil {
		t.Error("a release without a citation was written")
	}
	if _, err := Generate(fstest.MapFS{}, "", "mlx", []Kernel{{Release: "3.10.0"}}, nil); err == nil || !strings.Contains(err.Error(), "3.10.0") {
		t.Errorf("Generate with an uncited release: %v, want an error naming it", err)
	}
}

// A print that only another driver's generated entry recognises is written an entry of its
// own, so a family's file does not depend on which family was generated last; one that a
// hand-written entry or its own driver's recognises is not.
func TestHeldByAnother(t *testing.T) {
	mlx4 := &SourceDriver{Name: "mlx4_core"}
	for _, tc := range []struct {
		by   *kevent.Signature
		want bool
	}{
		{&kevent.Signature{Driver: "hns_roce", File: "vendors-scan.json"}, true},
		{&kevent.Signature{Driver: "mlx4_core", File: "mlx-scan.json"}, false},
		{&kevent.Signature{Driver: "hns_roce", File: "vendors.json"}, false},
		{nil, false},
	} {
		r := Result{DriverPrint: DriverPrint{Driver: mlx4}, By: tc.by}
		if got := heldByAnother(&r); got != tc.want {
			t.Errorf("recognised by %+v: held by another %v, want %v", tc.by, got, tc.want)
		}
	}
}
