package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/report"
)

// probeCmd is the probe across the wire: `probe --listen` on one host, `probe --peer HOST` on
// another; each end prints its view (both directions' bandwidth, latency, path MTU, GID type)
// and exits 0 when the pair passed, 2 when it failed, 3 when it could not run here.
func (a *App) probeCmd() *cobra.Command {
	var (
		listen, peer, device, format string
		port, size, iters, depth     int
		timeout                      time.Duration
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
			if timeout <= 0 || size <= 0 || iters <= 0 || depth <= 0 || port < 1 || port > 255 {
				return usageErr("--timeout, --size, --iters and --tx-depth must be positive, --port 1-255")
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
			host, _ := os.Hostname()
			o := probe.PairOptions{Options: probe.Options{Timeout: timeout, MsgSize: size, Iters: iters, TxDepth: depth}, Host: host}
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

func writePair(w io.Writer, r probe.PairResult) {
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
