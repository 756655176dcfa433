package driver

import (
	"context"
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"path"
	"sort"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/procirq"
	"github.com/rdmadiag/rdmadiag/internal/relit"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.interrupts",
		Description: "mlx5 devices have completion and async interrupt vectors in /proc/interrupts",
		Fault:       "cq-eq",
		Run:         runInterrupts,
	})
}

// mlx5IRQName matches mlx5's vector names: "%s@pci:%s" with mlx5_async%d / mlx5_comp%d
// (drivers/net/ethernet/mellanox/mlx5/core/pci_irq.c irq_set_name), "mlx5_async" on kernels
// before the IRQ pools, and mlx5_cmd_eq / mlx5_async_eq / mlx5_pages_eq / mlx5_comp%d on older
// eq.c. Group 1 is the vector kind, group 2 the PCI function.
var mlx5IRQName = relit.MustCompile(`^mlx5_(comp|combined|async|cmd_eq|async_eq|pages_eq|ctrl)[0-9]*@pci:([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$`)

func runInterrupts(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	devOf := map[string]string{}
	seen := map[string]bool{}
	var mlx5 []string
	for _, d := range env.Inventory().Devices {
		if d.PCI != nil && d.PCI.Driver == "mlx5_core" && !seen[d.PCI.BDF] {
			seen[d.PCI.BDF] = true
			mlx5 = append(mlx5, d.PCI.BDF)
			devOf[d.PCI.BDF] = d.Name
		}
	}
	// Functions mlx5_core drives without an RDMA device (mlx5_ib or ib_core missing) still
	// create their EQs and vectors; their absence is then a second, independent problem.
	bdfs, _ := env.Host.ReadDir("/sys/bus/pci/devices")
	for _, b := range bdfs {
		if t, err := env.Host.Readlink("/sys/bus/pci/devices/" + b + "/driver"); err == nil && path.Base(t) == "mlx5_core" && !seen[b] {
			seen[b] = true
			mlx5 = append(mlx5, b)
		}
	}
	if len(mlx5) == 0 {
		return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "interrupts"}, Severity: report.Skipped,
			Summary: "no mlx5 device: interrupt vectors are only checked for mlx5 (their names are documented)"}}}, nil
	}
	const src = procirq.Path
	irqs := observe.Interrupts.Get(env)
	if nh := env.Host.Lacks(host.PartInterrupts); irqs.Err != nil && nh != nil {
		f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "interrupts"}, Summary: "interrupt vectors not counted: " + nh.Reason}}
		return []engine.Finding{f.SkippedBy(report.LimitSource, nh.Lift)}, nil
	}
	if irqs.Err != nil {
		return nil, irqs.Err
	}
	type vecs struct {
		comp, async []procirq.IRQ
	}
	per := map[string]*vecs{}
	for name, list := range irqs.ByName() {
		m := mlx5IRQName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		v := per[m[2]]
		if v == nil {
			v = &vecs{}
			per[m[2]] = v
		}
		if m[1] == "comp" || m[1] == "combined" {
			v.comp = append(v.comp, list...)
		} else {
			v.async = append(v.async, list...)
		}
	}
	sort.Strings(mlx5)
	var out []engine.Finding
	for _, bdf := range mlx5 {
		dev := devOf[bdf]
		f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "device", Name: dev, Device: dev, PCI: bdf}}}
		if dev == "" {
			f.Subject = report.Subject{Kind: "pci", Name: bdf, PCI: bdf}
			dev = "mlx5_core function"
		}
		v := per[bdf]
		if v == nil {
			v = &vecs{}
		}
		var total uint64
		for _, i := range v.comp {
			total += i.Total
		}
		f.Evidence = []report.Evidence{
			report.EvExp("completion vectors", fmt.Sprint(len(v.comp)), "at least 1", src),
			report.EvExp("async/control vectors", fmt.Sprint(len(v.async)), "at least 1", src),
			report.Ev("completion interrupts", fmt.Sprint(total), src),
		}
		if irqs.Bad > 0 {
			// A vector on a garbled line is not counted: say so rather than let a missing
			// vector look certain.
			f.Evidence = append(f.Evidence, report.Ev("lines not parsed", fmt.Sprint(irqs.Bad), src))
		}
		switch {
		case len(v.comp) == 0:
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("%s (%s) has no completion interrupt vector: its EQs/MSI-X vectors were not set up, so completions are never signalled", dev, bdf)
			f.Remediation = "Read the kernel log for IRQ/EQ allocation errors (driver.kernel_log); check pci=nomsi on the kernel command line, the MSI-X setting in the BIOS, and the vector budget with many VFs; reload mlx5_core."
		case len(v.async) == 0:
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s (%s) has %d completion vector(s) but no async/command vector: firmware events and command completions are not interrupt-driven", dev, bdf, len(v.comp))
		default:
			f.Severity = report.OK
			f.Summary = fmt.Sprintf("%s (%s) has %d completion and %d async vector(s)", dev, bdf, len(v.comp), len(v.async))
		}
		out = append(out, f)
	}
	return out, nil
}
