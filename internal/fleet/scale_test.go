package fleet

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"runtime"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// -corpus DIR keeps the 2,000 reports of TestPlantedDrift2000 in DIR, for timing `rdmadiag
// fleet` against other readers of the same files (docs/fleet.md).
var corpus = flag.String("corpus", "", "write the 2,000 generated reports into this directory and keep them")

const plantedHost = 1234

// plantFirmware gives one host an older firmware than the other 1,999 on the same board.
func plantFirmware(i int, r *report.Report) {
	if i == plantedHost {
		r.Host.Inventory.Devices[0].FirmwareVersion = "22.39.1002"
	}
}

// 2,000 reports on disk, one of them with a different firmware: fleet must name that host and
// only it, and read every report from a directory walk.
func TestPlantedDrift2000(t *testing.T) {
	g := generator{tmpl: loadTemplate(t), plant: plantFirmware}
	dir := *corpus
	if dir == "" {
		dir = t.TempDir()
	}
	size := g.write(t, dir, 2000)
	t.Logf("2000 reports, %.1f MB", float64(size)/1e6)

	a := NewAggregator(Options{Now: genNow, Stale: 3600e9, Names: 20})
	a.Consume(context.Background(), Inputs([]string{dir}, nil), 2)
	r := a.Result()

	if r.Reports != 2000 || len(r.Verdicts) != 1 || r.Verdicts[0].Verdict != "healthy" || r.Verdicts[0].Count != 2000 {
		t.Fatalf("want 2000 healthy reports, got %d: %+v", r.Reports, r.Verdicts)
	}
	if r.Stale.Count != 0 || r.Failed.Count != 0 {
		t.Errorf("stale %+v failed %+v", r.Stale, r.Failed)
	}
	if len(r.Drift) != 1 {
		t.Fatalf("want exactly the planted drift, got %d: %+v", len(r.Drift), r.Drift)
	}
	d := r.Drift[0]
	want := fmt.Sprintf("node-%05d", plantedHost)
	if d.Attribute != AttrFirmware || d.Majority.Hosts.Count != 1999 || len(d.Odd) != 1 || d.Odd[0].Value != "22.39.1002" ||
		d.Odd[0].Hosts.Count != 1 || len(d.Odd[0].Hosts.Names) != 1 || d.Odd[0].Hosts.Names[0].Host != want {
		t.Errorf("want firmware drift naming %s: %+v", want, d)
	}
	if r.ExitCode != 1 || r.Healthy {
		t.Errorf("a drift needs attention: exit %d", r.ExitCode)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("22.39.1002: 1 host(s): "+want+" (mlx5_0)")) {
		t.Errorf("the table must name the host:\n%s", out.String())
	}
}

// Live heap after aggregating 20,000 reports must stay under twice that after 2,000: the
// aggregate keeps counts, capped name lists and bucketed histograms, not reports. Every host
// has its own name and counter values, and every 100th host a planted odd value, so that each
// structure is exercised.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 22,000 reports")
	}
	g := generator{tmpl: trimmed(loadTemplate(t)), plant: varied}
	heap := func(n int) uint64 {
		a := NewAggregator(Options{Now: genNow, Stale: 3600e9, Names: 20})
		a.Consume(context.Background(), g.inputs(n), 2)
		r := a.Result()
		if r.Reports != n {
			t.Fatalf("read %d of %d", r.Reports, n)
		}
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		runtime.KeepAlive(a)
		return m.HeapAlloc
	}
	h2, h20 := heap(2000), heap(20000)
	t.Logf("live heap after 2,000 reports: %d KiB; after 20,000: %d KiB", h2>>10, h20>>10)
	if h20 >= 2*h2 {
		t.Errorf("live heap grows with the number of reports: %d KiB after 2,000, %d KiB after 20,000", h2>>10, h20>>10)
	}
}

// trimmed keeps the template's inventory and first findings: the memory test is about what
// the aggregate keeps, and small reports keep it quick.
func trimmed(r *report.Report) *report.Report {
	c := *r
	c.Findings = c.Findings[:min(5, len(c.Findings))]
	c.Faults = nil
	return &c
}

// varied gives each host its own counter values and every 100th host an odd firmware, MTU
// and a critical root cause.
func varied(i int, r *report.Report) {
	d := &r.Host.Inventory.Devices[0]
	for p := range d.Ports {
		c := map[string]uint64{}
		for k, v := range d.Ports[p].ErrorCounters {
			c[k] = v
		}
		c["symbol_error"] = uint64(i * 7919 % 100000)
		d.Ports[p].ErrorCounters = c
		if i%100 == 0 {
			d.Ports[p].NetdevMTU = 1500 + i%7
		}
	}
	if i%100 == 0 {
		d.FirmwareVersion = fmt.Sprintf("22.%d.1000", i%13)
		r.Summary.Verdict = "critical"
		r.Findings = append(append([]report.Finding(nil), r.Findings...), report.Finding{CheckID: "port.state", Layer: "port",
			Subject: report.Subject{Kind: "port", Name: fmt.Sprintf("mlx5_0/%d", i)}, Severity: report.Critical,
			Summary: fmt.Sprintf("port down on host %d", i), Fault: "port-link", Ref: "port.state@x"})
	}
}

// BenchmarkFleet2000 aggregates 2,000 reports as `check --format json` writes them, from
// memory (bytes/s is the report text read).
func BenchmarkFleet2000(b *testing.B) {
	g := generator{tmpl: loadTemplate(b), plant: plantFirmware}
	reps := make([][]byte, 2000)
	var size int64
	for i := range reps {
		reps[i] = g.report(i)
		size += int64(len(reps[i]))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		a := NewAggregator(Options{Now: genNow, Stale: 3600e9, Names: 20})
		a.Consume(context.Background(), memInputs(reps), runtime.GOMAXPROCS(0))
		if r := a.Result(); len(r.Drift) != 1 {
			b.Fatalf("drift %+v", r.Drift)
		}
	}
}

// BenchmarkFleet20000 reports the live heap after 20,000 full-size reports (generated as they
// are read) and the most the heap held while reading them.
func BenchmarkFleet20000(b *testing.B) {
	g := generator{tmpl: loadTemplate(b), plant: varied}
	for b.Loop() {
		done, peakc := make(chan struct{}), make(chan uint64)
		go func() { // sample the heap every 5 ms while the fleet reads (ReadMemStats stops the world)
			var m runtime.MemStats
			var peak uint64
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					peakc <- peak
					return
				case <-t.C:
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapAlloc)
				}
			}
		}()
		a := NewAggregator(Options{Now: genNow, Stale: 3600e9, Names: 20})
		a.Consume(context.Background(), g.inputs(20000), runtime.GOMAXPROCS(0))
		close(done)
		peak := <-peakc
		a.Result()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		runtime.KeepAlive(a)
		b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-heap-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}

// memInputs yields reports held in memory.
func memInputs(reps [][]byte) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for i, b := range reps {
			if !yield(Input{Name: fmt.Sprintf("mem/%d.json", i), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(b)), nil
			}}) {
				return
			}
		}
	}
}
