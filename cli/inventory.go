package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/checks"

	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

// reportInventory turns the run's shared inventory into the report's typed inventory section.
// It takes what the checks read (the ports' state, rate and LIDs as the run first read them, the
// netdevs' attributes from observe.Netdev), so that the report describes the host the checks
// judged and reads only what no check read; the ports' error counters are read through the
// host (the inventory leaves them to whoever asks).
func reportInventory(env *checks.Env) *report.Inventory {
	h, inv := env.Host, env.Inventory()
	out := &report.Inventory{Devices: []report.InventoryDevice{}}
	for _, d := range inv.Devices {
		rd := report.InventoryDevice{Name: d.Name, NodeType: d.NodeType, HCAType: d.HCAType, FirmwareVersion: d.FWVer,
			BoardID: d.BoardID, Driver: d.Driver, DriverVersion: d.DriverVersion, NodeGUID: d.NodeGUID, Parent: d.Parent,
			Ports: []report.InventoryPort{}}
		if p := d.PCI; p != nil {
			rd.PCI, rd.PF = p.BDF, p.PF
			if p.Vendor != 0 {
				rd.VendorID = fmt.Sprintf("0x%04x", p.Vendor)
			}
			if p.DeviceID != 0 {
				rd.DeviceID = fmt.Sprintf("0x%04x", p.DeviceID)
			}
			n := p.NUMANode
			rd.NUMANode = &n
		}
		for _, p := range d.Ports {
			p.ReadAttrs(h, d.Name) // on the loop's copy: checks cut short may still read the shared one
			rp := report.InventoryPort{Port: p.Num, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer,
				LID: p.LID, SMLID: p.SMLID, Netdevs: p.Netdevs,
				ErrorCounters: inventory.ErrorCounters(h, d, p)}
			if len(p.Netdevs) > 0 {
				rp.NetdevMTU = observe.Netdev(env, p.Netdevs[0]).MTU
			}
			if g := p.GID; g != nil {
				rp.GID = &report.InventoryGID{Index: g.Index, GID: g.Addr, Type: g.Type}
			}
			if r, err := inventory.ParseRate(p.Rate); err == nil {
				g := r.Gbps
				rp.RateGbps, rp.Rate = &g, p.Rate
				if r.Width > 0 {
					rp.Width = fmt.Sprintf("%dX", r.Width)
				}
				rp.Speed = r.Speed
			} else if p.Rate != "" {
				rp.Rate = p.Rate // kept as printed; the port checks say what is wrong with it
			}
			rd.Ports = append(rd.Ports, rp)
		}
		out.Devices = append(out.Devices, rd)
	}
	return out
}

const inventoryExitHelp = `Exit codes:
  0   the devices were read (also when there are none: "no RDMA devices" says why)
  3   the host could not be read: the snapshot or tree does not open, /sys/class/infiniband or
      a device's files could not be read (the lines that could be read are still printed, the
      errors go to stderr), or the reads did not finish within --timeout
  64  usage error (unknown flag or format, --snapshot with --root)
  130 interrupted (Ctrl-C, SIGTERM, SIGHUP)`

// inventoryDoc is the JSON of `rdmadiag inventory`: the report's schema version, the tool and
// the same host section a check report carries, so that one reader serves both.
type inventoryDoc struct {
	SchemaVersion string          `json:"schema_version"`
	Tool          report.Tool     `json:"tool"`
	Host          report.HostInfo `json:"host"`
}

type inventoryFlags struct {
	src     source
	format  string
	timeout time.Duration
}

func (a *App) inventoryCmd() *cobra.Command {
	f := &inventoryFlags{}
	c := &cobra.Command{
		Use:   "inventory",
		Short: "List the RDMA devices and ports: PCI slot, NUMA node, firmware, PSID, driver, state, rate, LID or GID, netdev",
		Long: "Print one line per port, the first look ibstat and ibv_devinfo give: device/port, PCI slot\n" +
			"(domain 0000 left out), NUMA node, firmware version, PSID (board_id), driver, port state (with the\n" +
			"physical state when not up), rate and width, LID and subnet manager LID in decimal (InfiniBand) or\n" +
			"the routable RoCE GID as [index] address and type (the lowest index carrying an IP address, RoCE v2\n" +
			"preferred), and the netdev with its MTU. Nothing is judged: `rdmadiag check` does that.\n" +
			"--format json prints the typed inventory of a check report's host section (host.inventory).\n\n" +
			inventoryExitHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runInventory(cmd.Context(), f) },
	}
	f.src.flags(c)
	c.Flags().StringVar(&f.format, "format", "table", "output format: table or json")
	completeValues(c, "format", []string{"table", "json"})
	c.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "deadline for reading the host (a wedged device can block sysfs reads)")
	return c
}

func (a *App) runInventory(ctx context.Context, f *inventoryFlags) error {
	switch {
	case f.format != "table" && f.format != "json":
		return usageErr("--format %q: want table or json", f.format)
	case f.timeout <= 0:
		return usageErr("--timeout %s: must be positive", f.timeout)
	}
	openCtx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %s reached", f.timeout))
	defer cancel()
	h, cleanup, err := a.openHost(openCtx, f.src)
	if err != nil {
		return err
	}
	defer cleanup()
	type result struct {
		hi   report.HostInfo
		errs []string
	}
	ch := make(chan result, 1) // buffered: a read still blocked after the deadline may finish later
	ictx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	go func() {
		env := checks.NewEnv(h, checks.Options{})
		env.Bind(ictx) // the discovery stops reading at the deadline, not only its answer
		hi := a.hostInfo(env, f.src)
		inv := env.Inventory()
		var errs []string
		if inv.Absent != nil && !errors.Is(inv.Absent, fs.ErrNotExist) {
			errs = append(errs, inv.Absent.Error())
		}
		for _, d := range inv.Devices {
			for _, e := range d.Errors {
				errs = append(errs, d.Name+": "+e.Error())
			}
		}
		ch <- result{hi: hi, errs: errs}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return &exitError{code: report.ExitInterrupted, err: context.Cause(ctx)}
	case <-time.After(f.timeout):
		return &exitError{code: report.ExitUnknown, err: fmt.Errorf("the host's files did not answer within --timeout %s (a wedged device?); "+
			"`rdmadiag check` names the read that blocks", f.timeout)}
	}
	var out bytes.Buffer
	if f.format == "json" {
		doc := inventoryDoc{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "rdmadiag", Version: a.Version}, Host: r.hi}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
	} else {
		writeInventoryTable(&out, r.hi, h, a.tableWidth(false))
	}
	if _, err := a.Stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if len(r.errs) > 0 {
		for _, e := range r.errs {
			fmt.Fprintf(a.Stderr, "rdmadiag: inventory: could not read %s\n", e)
		}
		return &exitCode{code: report.ExitUnknown}
	}
	return nil
}

// writeInventoryTable writes a line naming the host, then the ports, or why there are none, in
// width columns as the check table (COLUMNS, the terminal's width, else 80).
func writeInventoryTable(w *bytes.Buffer, hi report.HostInfo, h *host.Host, width int) {
	var head []string
	if hi.Hostname != "" {
		head = append(head, hi.Hostname)
	}
	if hi.KernelRelease != "" {
		head = append(head, "kernel "+hi.KernelRelease)
	}
	switch {
	case hi.Origin != "":
		head = append(head, hi.Source+" "+hi.Origin)
	default:
		head = append(head, hi.Source)
	}
	n := 0
	if hi.Inventory != nil {
		n = len(hi.Inventory.Devices)
	}
	if n == 0 {
		fmt.Fprintf(w, "%s\nno RDMA devices: %s\n", strings.Join(head, ", "), noDevicesReason(h))
		return
	}
	for _, l := range render.Wrap(fmt.Sprintf("%s: %d RDMA device(s)", strings.Join(head, ", "), n), width) {
		fmt.Fprintln(w, l)
	}
	render.RenderInventoryTable(w, hi.Inventory, width)
}

// noDevicesReason says why /sys/class/infiniband lists nothing, as driver.devices does.
func noDevicesReason(h *host.Host) string {
	_, err := h.ReadDir(inventory.ClassDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return inventory.ClassDir + " does not exist\n(no RDMA driver is loaded; `rdmadiag check` says which layer is missing)"
	case err != nil:
		return err.Error()
	}
	return inventory.ClassDir + " is empty\n(ib_core is loaded, no device registered; `rdmadiag check` says why)"
}
