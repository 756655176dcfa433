package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// The generated fleets start from a recorded fixture's report: a healthy host with one
// ConnectX-6 Dx on the distribution's in-box driver.
const templateGolden = "../../fixtures/sysfs/fw-inbox-cx6dx/check.golden.json"

// genNow is the clock of the generated fleets; every report started within the last hour.
var genNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func loadTemplate(t testing.TB) *report.Report {
	t.Helper()
	b, err := os.ReadFile(templateGolden)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Summary.Verdict != "healthy" || r.Host.Inventory == nil || len(r.Host.Inventory.Devices) == 0 ||
		r.Host.Inventory.Devices[0].FirmwareVersion == "" {
		t.Fatalf("%s is no longer a healthy report with an inventory: pick another template", templateGolden)
	}
	return &r
}

// generator makes report i of a fleet from the template: hostname node-NNNNN, a start time in
// the last hour, and whatever plant changes. Reports are written as `check --format json`
// writes them (two-space indent).
type generator struct {
	tmpl  *report.Report
	plant func(i int, r *report.Report)
}

func (g generator) report(i int) []byte {
	r := *g.tmpl
	r.Host.Hostname = fmt.Sprintf("node-%05d", i)
	started := genNow.Add(-time.Duration(i%3600) * time.Second)
	r.Tool.Started = &started
	inv := *r.Host.Inventory
	inv.Devices = append([]report.InventoryDevice(nil), inv.Devices...)
	for d := range inv.Devices {
		inv.Devices[d].Ports = append([]report.InventoryPort(nil), inv.Devices[d].Ports...)
	}
	r.Host.Inventory = &inv
	if g.plant != nil {
		g.plant(i, &r)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&r); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// inputs yields n generated reports from memory, made as they are read, so that the fleet, not
// the test, is what holds memory.
func (g generator) inputs(n int) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for i := range n {
			name := fmt.Sprintf("gen/node-%05d.json", i)
			if !yield(Input{Name: name, Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(g.report(i))), nil
			}}) {
				return
			}
		}
	}
}

// write puts n reports into dir as node-NNNNN.json.
func (g generator) write(t testing.TB, dir string, n int) int64 {
	t.Helper()
	var total int64
	for i := range n {
		b := g.report(i)
		total += int64(len(b))
		if err := os.WriteFile(fmt.Sprintf("%s/node-%05d.json", dir, i), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return total
}
