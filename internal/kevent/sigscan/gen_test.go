package sigscan

import (
	"os"
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

// The ratelimit's "<function>: N callbacks suppressed" gets one entry per driver and fault row,
// holding the functions; a function is in one entry only, and one whose line the table already
// knows is left to it.
func TestRatelimitEntries(t *testing.T) {
	// The table without the generated mlx file, as Generate reads it for the mlx family.
	fsys, err := tableFS(os.DirFS("../signatures"), "mlx-scan.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kevent.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var mlx5 *SourceDriver
	for _, d := range SourceDrivers {
		if d.Name == "mlx5_core" {
			mlx5 = d
		}
	}
	res := func(file, fn, format string) *Result {
		return &Result{DriverPrint: DriverPrint{Driver: mlx5, Print: Print{File: file, Func: fn, Format: format, Level: "err", Ratelimited: true}}}
	}
	var l ratelimits
	l.add(res("drivers/net/ethernet/mellanox/mlx5/core/cmd.c", "mlx5_cmd_out_err", "%s(0x%x) op_mod(0x%x) failed, status %s(0x%x), syndrome (0x%x), err(%d)"), "6.12.19")
	l.add(res("drivers/net/ethernet/mellanox/mlx5/core/cmd.c", "mlx5_cmd_out_err", "%s(0x%x) op_mod(0x%x) failed, status %s(0x%x), syndrome (0x%x), err(%d)"), "5.15.178")
	l.add(res("drivers/net/ethernet/mellanox/mlx5/core/en_rx.c", "mlx5_cmd_out_err", "bad cqe"), "6.12.19") // another row: stays in the first
	l.add(res("drivers/iommu/intel/dmar.c", "dmar_fault", "handling fault status reg %x"), "6.12.19")       // pcie.json knows it
	sigs := l.signatures(tb, map[string]string{"firmware-health": "firmware", "firmware": "firmware", "dma-engine": "pcie", "driver-module": "driver", "netdev-tx": "driver"}, map[string]bool{})
	if len(sigs) != 1 {
		t.Fatalf("%d entries: %+v", len(sigs), sigs)
	}
	s := sigs[0]
	if s.Format != "%s: %d callbacks suppressed" || s.Kind != kevent.KindDump || s.Severity != "info" ||
		strings.Join(s.Values["1"], ",") != "mlx5_cmd_out_err" || s.Kernels != "6.12.19,5.15.178" || s.Layer != "firmware" {
		t.Errorf("%+v", s)
	}
}
