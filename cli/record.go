package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/fixtures"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/internal/tempdir"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

func (a *App) recordCmd() *cobra.Command {
	var (
		src     source
		out     string
		redact  bool
		raw     bool
		minimal bool
		desc    string
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "record -o FILE",
		Short: "Capture this host into a snapshot that `check --snapshot` analyses anywhere",
		Long: "Run every check that reads the host (not the probes) and record what they read: files, RDMA netlink,\n" +
			"devlink and ethtool answers; add the allow-listed context (PCI path, netdevs, RDMA modules), the kernel log\n" +
			"and the process facts, into a .tar.gz snapshot.\n" +
			"Run as root for a complete snapshot; what cannot be read is listed in the snapshot with the reason.\n" +
			"--redact replaces GUIDs, MAC and IP addresses, serial numbers and the hostname with consistent stand-ins of the same form, as whole words only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr("record needs -o FILE (use - for standard output)")
			}
			if timeout <= 0 {
				return usageErr("--timeout %s: must be positive", timeout)
			}
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), timeout, fmt.Errorf("--timeout %s reached", timeout))
			defer cancel()
			o := snapshot.RecordOptions{Redact: redact, Description: desc, Minimal: minimal,
				Ask: a.askChecks(ctx, checks.Options{RawContexts: raw})}
			return a.runRecord(ctx, src, out, o)
		},
	}
	src.flags(c)
	c.Flags().StringVarP(&out, "output", "o", "", "snapshot file to write (.tar.gz), - for standard output")
	c.Flags().BoolVar(&redact, "redact", false, "replace GUIDs, MAC/IP addresses, serial numbers and hostnames consistently")
	c.Flags().StringVar(&desc, "description", "", "what this snapshot shows (stored in meta.json)")
	c.Flags().BoolVar(&raw, "raw-contexts", false, "also record the drivers' raw QP/CQ contexts, for check --raw-contexts (root; mlx5, hns)")
	c.Flags().BoolVar(&minimal, "minimal", false, "record only what the checks read, without the allow-listed context (PCI path, netdevs, modules)")
	c.Flags().DurationVar(&timeout, "timeout", defaultTimeout, "deadline for the whole recording")
	return c
}

// askChecks runs every check that reads the host (not the probes, which create resources and
// need the live device) and the report's inventory on the recording's view of the host: what
// they read is what the snapshot needs, so a new check is recorded without any change to the
// recorder. Their findings are not kept; the snapshot is judged when it is checked.
func (a *App) askChecks(ctx context.Context, opts checks.Options) func(*host.Host) {
	return func(view *host.Host) {
		var cs []checks.Check
		for _, c := range a.Registry.All() {
			if !c.Probe {
				cs = append(cs, c)
			}
		}
		env := checks.NewEnv(view, opts)
		env.Now = a.Now
		checks.Run(ctx, env, cs, 2)
		// The report's inventory section: it reads only what no check read (checks.Run shares the rest).
		reportInventory(env)
	}
}

func (a *App) runRecord(ctx context.Context, src source, out string, o snapshot.RecordOptions) error {
	if err := checkOutputPath(out); err != nil {
		return err
	}
	h, cleanup, err := a.openHost(ctx, src)
	if err != nil {
		return err
	}
	defer cleanup()
	tmp, remove, err := tempdir.Make("rdmadiag-record-")
	if err != nil {
		return err
	}
	o.ToolVersion, o.Now = a.Version, a.Now()
	// A read that blocks (a wedged device's sysfs file) must not hold the recording forever: at
	// the deadline or a signal the recording fails and names where it is blocked.
	done := make(chan error, 1)
	go func() { done <- snapshot.Record(h, tmp, o) }()
	select {
	case err := <-done:
		defer remove()
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
	case <-ctx.Done():
		// The recording left behind still writes into tmp if its read ever returns: it removes
		// the directory itself then, or removing it now would only let it be made again (the
		// process removes it on its way out otherwise).
		go func() {
			<-done
			remove()
		}()
		msg := "record did not finish: " + context.Cause(ctx).Error()
		for _, p := range h.Pending() {
			msg += "; blocked in " + p.What
		}
		return &exitError{code: report.ExitUnknown, err: errors.New(msg)}
	}
	if out == "-" {
		var buf bytes.Buffer
		if err := snapshot.Pack(&buf, tmp); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		_, err = a.Stdout.Write(buf.Bytes())
		return err
	}
	var n countingWriter
	if err := replaceFile(out, 0o644, func(w io.Writer) error {
		n.w = w
		return snapshot.Pack(&n, tmp)
	}); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(a.Stderr, "rdmadiag: wrote %s (%d bytes)\n", out, n.n)
	if os.Geteuid() != 0 && h.Kind() == "live" {
		fmt.Fprintln(a.Stderr, "rdmadiag: not root: some files and the kernel log may be missing; see meta.json in the snapshot")
	}
	return nil
}

// countingWriter counts what passes through it: record says how large the snapshot it wrote is.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (a *App) listCmd() *cobra.Command {
	var o outputFlags
	var pf pluginFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List the checks with their layer and what they look at",
		Long: "List every check: its id (for --only and --skip), its layer, what it looks at, its row of the fault\n" +
			"table (report/engine/faults.json) and whether it is a verbs probe. --format json prints the document\n" +
			"described by report/list-schema.json.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.resolve(a, cmd)
			if o.format != "table" && o.format != "json" {
				return usageErr("--format %q: want table or json", o.format)
			}
			if err := checkOutputPath(o.output); err != nil {
				return err
			}
			// The plugins a live check would run (or those of --plugins), found without running any.
			pf.resolve(cmd)
			reg, _, _, err := pf.registry(a, true)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if o.format == "json" {
				l := report.CheckList{SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "rdmadiag", Version: a.Version}}
				for _, c := range reg.All() {
					l.Checks = append(l.Checks, report.ListedCheck{ID: c.ID, Layer: c.Layer(), Description: c.Description, Fault: c.Fault, Probe: c.Probe, Origin: c.Origin})
				}
				if err := render.RenderCheckList(&buf, l); err != nil {
					return err
				}
				return o.write(a, buf.Bytes())
			}
			for _, c := range reg.All() {
				probe := ""
				if c.Probe {
					probe = " (probe)"
				}
				origin := ""
				if c.Origin != "" {
					origin = " (from " + c.Origin + ")"
				}
				fmt.Fprintf(&buf, "%-28s %-9s %s%s%s\n", c.ID, c.Layer(), c.Description, probe, origin)
			}
			return o.write(a, buf.Bytes())
		},
	}
	o.register(c, "table", []string{"table", "json"}, "output format: table or json", "write the list to this file instead of stdout")
	pf.register(c, false)
	return c
}

// demoCmd runs check on this host when it has an RDMA device, and otherwise on the embedded demo
// snapshot, saying which, so that a first run on a laptop or CI machine shows what the tool does.
func (a *App) demoCmd() *cobra.Command {
	var o outputFlags
	c := &cobra.Command{
		Use:   "demo",
		Short: "Check this host, or the embedded demo snapshot when this host has no RDMA device",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.resolve(a, cmd)
			f := &checkFlags{outputFlags: o, timeout: defaultTimeout, parallel: 2}
			f.opts.ProbeTimeout = defaultProbeTimeout
			h, cleanup, err := (&source{}).open(cmd.Context())
			if err != nil {
				return err
			}
			devs := checks.NewEnv(h, checks.Options{}).Inventory()
			cleanup()
			if len(devs.Devices) > 0 {
				return a.runCheck(cmd.Context(), f)
			}
			why := "no /sys/class/infiniband"
			if devs.Absent == nil {
				why = "/sys/class/infiniband is empty"
			}
			dir, remove, err := tempdir.Make("rdmadiag-demo-")
			if err != nil {
				return err
			}
			defer remove()
			name, data := demoSnapshot()
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.Stderr, "rdmadiag: this host has no RDMA device (%s); checking the embedded demo snapshot %q instead.\n"+
				"rdmadiag: run `rdmadiag check` to check this host itself.\n\n", why, fixtures.DemoScenario)
			f.src.snapshot = p
			return a.runCheck(cmd.Context(), f)
		},
	}
	o.register(c, "table", render.Formats(), "output format: "+strings.Join(render.Formats(), ", "),
		"write the report to this file instead of stdout")
	return c
}
