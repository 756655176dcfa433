package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/internal/fleet"
	"github.com/rdmadiag/rdmadiag/report"
)

const fleetExitHelp = `Exit codes:
  0   every report was read, is fresh, says healthy, and no host differs from its peers
  1   something is named: a host that is not healthy (warning, critical, unknown,
      interrupted), a stale or failed report, or drift between hosts of the same card
      (slower ports included); error counter outliers are listed but do not change it
  64  usage error
  130 interrupted (SIGINT or SIGTERM): reading stops at once, no aggregate is written
      (--format json writes the error document, exit_code 130)`

// fleetStdin is what "-" reads; tests replace it.
var fleetStdin io.Reader = os.Stdin

func (a *App) fleetCmd() *cobra.Command {
	var (
		o       outputFlags
		stale   time.Duration
		now     string
		names   int
		workers int
		pairsOf bool
		plan    string
	)
	c := &cobra.Command{
		Use:   "fleet [flags] PATH...",
		Short: "Aggregate many JSON reports: verdicts, root causes, drift, outliers, stale and failed hosts",
		Long: "Read rdmadiag JSON reports (files; directories walked recursively for *.json; - for standard input,\n" +
			"which may carry several reports one after another) one at a time, and say which hosts need attention:\n" +
			"hosts by verdict, root causes ranked by how many hosts they hit, drift between hosts of the same card\n" +
			"(firmware and PSID, driver version, port rate, MTU, link layer), ports slower than their peers, error\n" +
			"counters far above the fleet's, and reports that are stale or failed. A host is host.hostname in its\n" +
			"report, or the file's path; a host with several reports counts once, with its newest (tool.started),\n" +
			"and the older ones are named as ignored. Details: docs/fleet.md.\n\n" + fleetExitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("fleet needs at least one PATH: report files, directories of them, or - for standard input")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.resolve(a, cmd)
			var fo fleet.Options
			switch {
			case o.format != "table" && o.format != "json":
				return usageErr("--format %q: want table or json", o.format)
			case stale < 0:
				return usageErr("--stale %s: must not be negative", stale)
			case names < 0:
				return usageErr("--names %d: must not be negative", names)
			case workers < 1:
				return usageErr("--parallel %d: must be at least 1", workers)
			}
			if err := checkOutputPath(o.output); err != nil {
				return err
			}
			if plan != "" && !pairsOf {
				return usageErr("--plan goes with --pairs")
			}
			if pairsOf {
				return a.fleetPairs(o, plan, args)
			}
			fo.Now, fo.Stale, fo.Names = a.Now(), stale, names
			if now != "" {
				t, err := time.Parse(time.RFC3339, now)
				if err != nil {
					return usageErr("--now %q: want an RFC 3339 time such as 2026-01-02T03:04:05Z", now)
				}
				fo.Now = t
			}
			agg := fleet.NewAggregator(fo)
			ctx := cmd.Context()
			agg.Consume(ctx, fleet.Inputs(args, fleetStdin), workers)
			if ctx.Err() != nil {
				// A partial aggregate would name hosts as missing that were only not read yet.
				// The code is the process's, so that --format json's error document says it too.
				return &exitError{code: report.ExitInterrupted, err: fmt.Errorf("fleet: %w: nothing written", context.Cause(ctx))}
			}
			r := agg.Result()
			write := fleet.WriteTable
			if o.format == "json" {
				write = fleet.WriteJSON
			}
			var buf bytes.Buffer
			if err := write(&buf, r); err != nil {
				return err
			}
			if err := o.write(a, buf.Bytes()); err != nil {
				return err
			}
			if r.ExitCode != 0 {
				return &exitCode{code: r.ExitCode}
			}
			return nil
		},
	}
	o.register(c, "table", []string{"table", "json"}, "output format: table or json", "write the result to this file instead of stdout")
	fl := c.Flags()
	fl.DurationVar(&stale, "stale", time.Hour, "a report whose tool.started is older than this is stale (0: do not judge age)")
	fl.StringVar(&now, "now", "", "measure staleness from this RFC 3339 time instead of the clock")
	fl.IntVar(&names, "names", 20, "hosts named per list (the first by name; counts are always complete); 0 names all")
	fl.IntVar(&workers, "parallel", runtime.GOMAXPROCS(0), "reports decoded at the same time")
	fl.BoolVar(&pairsOf, "pairs", false, "read `rdmadiag probe --format json` results of a fleet's pairs instead of reports, and say which hosts and links are bad")
	fl.StringVar(&plan, "plan", "", "with --pairs: the `probe plan` output the results are held against, naming every planned end without a result (default: plan.txt in a directory given)")
	return c
}
