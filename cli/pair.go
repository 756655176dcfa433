package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/pairs"
	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// probeCmd is the probe across the wire: `probe --listen` on one host, `probe --peer HOST` on
// another; each end prints its view (both directions' bandwidth, latency, path MTU, GID type)
// and exits 0 when the pair passed, 2 when it failed, 3 when it could not run here.
func (a *App) probeCmd() *cobra.Command {
	var (
		listen, peer, device, format, name string
		port, size, iters, depth, round    int
		timeout                            time.Duration
	)
	c := &cobra.Command{
		Use:   "probe (--listen [ADDR] | --peer HOST[:PORT]) [--device DEV]",
		Short: "Connect an RC QP to a peer host across the fabric and move data both ways",
		Long: "Run `rdmadiag probe --listen` on one host and `rdmadiag probe --peer HOST` on another: the two ends\n" +
			"exchange their QP number, GID or LID and PSN over TCP (port " + strconv.Itoa(probe.PairPort) + " by default, as perftest), connect one RC QP each,\n" +
			"write to each other in turn (ib_write_bw's shape), then measure small-write latency and check the data.\n" +
			"Each end reports both directions, the path MTU and GID type, and the step that failed at its layer\n" +
			"(side channel, RTR refused, retry exceeded, remote access error). Exit 0 pass, 2 fail, 3 could not run.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			listening := cmd.Flags().Changed("listen")
			if listening == (peer != "") {
				return usageErr("probe needs exactly one of --listen [ADDR] and --peer HOST[:PORT]")
			}
			if timeout <= 0 || size <= 0 || iters <= 0 || depth <= 0 || port < 1 || port > 255 || round < 0 {
				return usageErr("--timeout, --size, --iters and --tx-depth must be positive, --port 1-255, --round not negative")
			}
			if format != "text" && format != "json" {
				return usageErr("--format %q: want text or json", format)
			}
			lib, err := verbs.Load()
			if err != nil {
				return &exitError{code: report.ExitUnknown, err: fmt.Errorf("libibverbs: %w", err)}
			}
			if device == "" {
				if device, err = onlyDevice(); err != nil {
					return usageErr("%v", err)
				}
			}
			host := name
			if host == "" {
				host, _ = os.Hostname()
			}
			o := probe.PairOptions{Options: probe.Options{Timeout: timeout, MsgSize: size, Iters: iters, TxDepth: depth}, Host: host, Round: round}
			if listening {
				addr := listen
				if addr == "" {
					addr = ":" + strconv.Itoa(probe.PairPort)
				} else if !strings.Contains(addr, ":") {
					addr += ":" + strconv.Itoa(probe.PairPort)
				}
				l, err := net.Listen("tcp", addr)
				if err != nil {
					return &exitError{code: report.ExitUnknown, err: fmt.Errorf("--listen %s: %w", addr, err)}
				}
				defer l.Close()
				fmt.Fprintf(a.Stderr, "rdmadiag: waiting for a peer on %s (%s port %d)\n", l.Addr(), device, port)
				o.Listener = l
			} else {
				o.Peer = peer
				if _, _, err := net.SplitHostPort(peer); err != nil {
					o.Peer = net.JoinHostPort(peer, strconv.Itoa(probe.PairPort))
				}
			}
			r := probe.Pair(cmd.Context(), lib, device, port, o)
			if format == "json" {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				writePair(a.Stdout, r)
			}
			switch {
			case cmd.Context().Err() != nil:
				return &exitError{code: report.ExitInterrupted, err: fmt.Errorf("interrupted")}
			case r.Status == probe.Pass:
				return nil
			case r.Status == probe.Skipped:
				return &exitError{code: report.ExitUnknown, err: fmt.Errorf("pair probe could not run: %s", r.Error)}
			}
			return &exitError{code: report.ExitCritical, err: fmt.Errorf("pair probe failed at %s: %s", r.Stage, r.Error)}
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "", "wait for one peer on ADDR (host:port, :port or empty for :"+strconv.Itoa(probe.PairPort)+")")
	f.Lookup("listen").NoOptDefVal = ""
	f.StringVar(&peer, "peer", "", "connect to the peer listening at HOST[:PORT]")
	f.StringVar(&device, "device", "", "RDMA device (default: the only one)")
	f.IntVar(&port, "port", 1, "port of the device")
	f.IntVar(&size, "size", 65536, "bytes per RDMA WRITE (ib_write_bw -s)")
	f.IntVar(&iters, "iters", 1000, "writes per direction (ib_write_bw -n)")
	f.IntVar(&depth, "tx-depth", 128, "writes in flight (ib_write_bw -t)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "deadline of the whole exchange, waiting for the peer included")
	f.StringVar(&format, "format", "text", "text or json")
	f.StringVar(&name, "name", "", "this end's name in the results (default: the hostname; fleet --pairs matches ends by it)")
	f.IntVar(&round, "round", 0, "the round of `probe plan` this probe runs, recorded in the result so that fleet --pairs --plan can name the partner of an end that never met it")
	c.AddCommand(a.probePlanCmd())
	return c
}

// probePlanCmd prints the pairings of a fleet's pair probes: every round a perfect matching, no
// pair repeated, so that after N rounds each host has met N partners and `fleet --pairs` can
// tell a bad host from a bad link.
func (a *App) probePlanCmd() *cobra.Command {
	var (
		rounds, round int
		me, format    string
	)
	c := &cobra.Command{
		Use:   "plan HOSTFILE",
		Short: "Pair a fleet's hosts for `probe`, round by round (one host name per line; - for standard input)",
		Long: "Print which host listens and which dials in each round. With --me NAME --round R, print only what\n" +
			"that host does in that round: \"listen\", \"peer HOST\" or \"idle\" (the srun and Kubernetes recipes\n" +
			"under deploy/ use this form).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rounds < 1 {
				return usageErr("--rounds %d: must be at least 1", rounds)
			}
			if format != "text" && format != "json" {
				return usageErr("--format %q: want text or json", format)
			}
			var in io.Reader = fleetStdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				defer f.Close()
				in = f
			}
			b, err := io.ReadAll(io.LimitReader(in, 16<<20))
			if err != nil {
				return usageErr("%s: %v", args[0], err)
			}
			var hosts []string
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					hosts = append(hosts, l)
				}
			}
			plan, err := pairs.Plan(hosts, rounds)
			if err != nil {
				return usageErr("%s: %v", args[0], err)
			}
			if me != "" {
				if round < 1 {
					return usageErr("--me needs --round R (from 1)")
				}
				fmt.Fprintln(a.Stdout, pairs.Role(plan, me, round))
				return nil
			}
			if format == "json" {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(plan)
			}
			for _, m := range plan {
				fmt.Fprintf(a.Stdout, "round %d: %s listens, %s dials\n", m.Round, m.Listen, m.Peer)
			}
			return nil
		},
	}
	c.Flags().IntVar(&rounds, "rounds", 3, "rounds, each a new partner for every host")
	c.Flags().IntVar(&round, "round", 0, "with --me: the round to print the role of")
	c.Flags().StringVar(&me, "me", "", "print only this host's role in --round")
	c.Flags().StringVar(&format, "format", "text", "text or json")
	return c
}

// onlyDevice is the one RDMA device of the host, for a probe run without --device.
func onlyDevice() (string, error) {
	ents, err := os.ReadDir("/sys/class/infiniband")
	if err != nil || len(ents) == 0 {
		return "", fmt.Errorf("no RDMA device in /sys/class/infiniband: name one with --device")
	}
	if len(ents) > 1 {
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return "", fmt.Errorf("several RDMA devices (%s): name one with --device", strings.Join(n, ", "))
	}
	return ents[0].Name(), nil
}

func writePair(out io.Writer, r probe.PairResult) {
	w := out
	verdict := "PASS"
	switch r.Status {
	case probe.Fail:
		verdict = "FAIL"
	case probe.Skipped:
		verdict = "COULD NOT RUN"
	}
	fmt.Fprintf(w, "PAIR PROBE %s: %s port %d (%s) with %s\n", verdict, r.Device, r.Port, r.Role, r.Peer)
	if r.Local != nil && r.Remote != nil {
		fmt.Fprintf(w, "  link: %s, path MTU %d (this end %d, peer %d)", r.Local.LinkLayer, r.PathMTU, r.Local.MTU, r.Remote.MTU)
		if r.Local.GIDType != "" {
			fmt.Fprintf(w, ", GID %s (%s) -> %s", r.Local.GID, r.Local.GIDType, r.Remote.GID)
		}
		fmt.Fprintln(w)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", warn)
	}
	for _, d := range []*probe.Direction{r.Out, r.In} {
		if d == nil {
			continue
		}
		fmt.Fprintf(w, "  %s -> %s: %.2f Gb/s (%.0f MiB/s, %d x %d B in %s)", d.From, d.To, d.Gbps, d.MiBps, d.Iters, d.MsgSize, d.Duration.Round(time.Microsecond))
		if r.LinkGbps > 0 {
			fmt.Fprintf(w, ", %.0f %% of the slower port's %.0f Gb/s", 100*d.Gbps/r.LinkGbps, r.LinkGbps)
		}
		if d.LatIters > 0 {
			fmt.Fprintf(w, "; write latency median %s, p99 %s", d.LatMedian.Round(time.Nanosecond*100), d.LatP99.Round(time.Nanosecond*100))
		}
		if d.Truncated {
			fmt.Fprint(w, " (cut short by the deadline)")
		}
		fmt.Fprintln(w)
	}
	if r.Status != probe.Pass {
		fmt.Fprintf(w, "  failed at %s: %s\n", r.Stage, r.Error)
		if r.Remedy != "" {
			fmt.Fprintf(w, "  fix: %s\n", r.Remedy)
		}
	}
}

// fleetPairs reads pair probe results (files, directories of *.json, - for standard input) and
// writes where the faults sit; exit 1 when a pair failed or ran slow.
func (a *App) fleetPairs(o outputFlags, planFile string, args []string) error {
	plan, err := readPairPlan(planFile, args)
	if err != nil {
		return usageErr("%v", err)
	}
	var ends []pairs.End
	var unreadable []string
	read := func(r io.Reader, name string) error {
		e, err := pairs.Read(r, name)
		ends = append(ends, e...)
		return err
	}
	for _, p := range args {
		if p == "-" {
			if err := read(fleetStdin, "standard input"); err != nil {
				return usageErr("%v", err)
			}
			continue
		}
		var files []string
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (path == p || strings.HasSuffix(path, ".json")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return usageErr("%v", err)
		}
		// One end's file cut short (a node that died mid-write, a full file system) must not
		// cost the verdict on every other pair: it is named, and the rest is judged.
		for _, f := range files {
			fh, err := host.OpenRegular(f)
			if err == nil {
				err = read(fh, f)
				fh.Close()
			}
			if err != nil {
				unreadable = append(unreadable, err.Error())
			}
		}
	}
	for _, u := range unreadable {
		fmt.Fprintf(a.Stderr, "rdmadiag: fleet --pairs: skipped %s\n", words.OneLine(u))
	}
	v := pairs.Localise(ends, plan)
	v.Unreadable = unreadable
	var buf bytes.Buffer
	if o.format == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(&buf, "%d pairs probed, %d failed", v.Pairs, v.Failed)
		if plan != nil {
			fmt.Fprintf(&buf, " (%d planned, %d ends without a result)", v.Planned, len(v.Missing))
		}
		fmt.Fprintln(&buf)
		for _, h := range v.BadHosts {
			fmt.Fprintf(&buf, "BAD HOST %s: failed with every partner (%s) at %s: its card, cable or switch port\n", h.Host, strings.Join(h.Partners, ", "), strings.Join(h.Stages, ", "))
		}
		for _, p := range v.BadLinks {
			fmt.Fprintf(&buf, "BAD LINK %s: failed at %s while both pass with other partners: the path between them (switch ports, an inter-switch link, a route)\n", p.Hosts, p.Stage)
		}
		for _, p := range v.SlowPairs {
			fmt.Fprintf(&buf, "SLOW PAIR %s: %.1f Gb/s, under half of the fleet's pairs at %.0f Gb/s\n", p.Hosts, p.Gbps, p.Link)
		}
		missing := map[string]bool{}
		for _, m := range v.Missing {
			missing[m.Host+" "+m.Partner] = true
			if m.Alone {
				if m.Host < m.Partner {
					fmt.Fprintf(&buf, "NOT PROBED round %d: %s <-> %s: neither end wrote a result (tasks that did not run, or results written elsewhere)\n", m.Round, m.Host, m.Partner)
				}
				continue
			}
			fmt.Fprintf(&buf, "MISSING round %d: no result from %s (partner %s): its task did not run, died, or wrote elsewhere\n", m.Round, m.Host, m.Partner)
		}
		for _, p := range v.Unclear {
			if missing[p.A+" "+p.B] || missing[p.B+" "+p.A] {
				fmt.Fprintf(&buf, "FAILED %s at %s: one end sent no result, so host and link cannot be told apart\n", p.Hosts, p.Stage)
				continue
			}
			fmt.Fprintf(&buf, "FAILED %s at %s: no other partner of one end to tell host from link; add rounds\n", p.Hosts, p.Stage)
		}
		for _, k := range v.Unplanned {
			fmt.Fprintf(&buf, "NOT IN PLAN %s: judged, but the plan does not pair them (results of another run, or a --name that is not the plan's)\n", k)
		}
	}
	if err := o.write(a, buf.Bytes()); err != nil {
		return err
	}
	if v.Failed > 0 || len(v.SlowPairs) > 0 {
		return &exitCode{code: 1}
	}
	// No pair probed (tasks that never ran, results written elsewhere) or results that could
	// not be read is a fabric not checked, not a healthy one.
	if v.Pairs == 0 || len(v.Unreadable) > 0 || len(v.Missing) > 0 {
		if v.Pairs == 0 {
			fmt.Fprintf(a.Stderr, "rdmadiag: fleet --pairs: no pair result in %s: nothing was probed\n", strings.Join(args, " "))
		}
		return &exitCode{code: report.ExitUnknown}
	}
	return nil
}

// readPairPlan is the plan fleet --pairs holds the results against: --plan FILE, else the
// plan.txt the Slurm recipe writes beside its results in a directory given, else none.
func readPairPlan(file string, args []string) ([]pairs.Match, error) {
	if file == "" {
		for _, p := range args {
			if st, err := os.Stat(filepath.Join(p, "plan.txt")); err == nil && st.Mode().IsRegular() {
				if file != "" {
					return nil, fmt.Errorf("plans in %s and %s: name the one to use with --plan", filepath.Dir(file), p)
				}
				file = filepath.Join(p, "plan.txt")
			}
		}
		if file == "" {
			return nil, nil
		}
	}
	f, err := host.OpenRegular(file)
	if err != nil {
		return nil, fmt.Errorf("--plan: %w", err)
	}
	defer f.Close()
	return pairs.ReadPlan(f, file)
}
