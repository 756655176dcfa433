// Command labspeed times commands for the lab's whole-run benchmark (`make e2e-speed`,
// lab/payloads/speed): `run` starts one command as its child, without a shell, and appends its
// wall time, CPU time (user+sys) and peak RSS, taken from the child's own rusage (wait4), as one
// JSON line; `table` reads those lines and prints, per configuration of the guest, each command's
// numbers next to ibv_devinfo -v and rdma -j res show qp measured in the same boot, the ratios
// per round, and whether the targets are met in every round.
//
//	labspeed run -o /out/speed.jsonl -config 1dev -round 1 -label ibv_devinfo -- ibv_devinfo -v
//	labspeed table /out/speed.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"syscall"
	"time"
)

// Sample is one timed run of one command.
type Sample struct {
	Config string `json:"config"`
	// Devices and QPs describe the configuration (for the table's headings and the targets).
	Devices int     `json:"devices"`
	QPs     int     `json:"qps"`
	Round   int     `json:"round"`
	Label   string  `json:"label"`
	Command string  `json:"command"`
	WallMS  float64 `json:"wall_ms"`
	// CPUMS is user plus system time of the child (and of any children it waited for).
	CPUMS     float64 `json:"cpu_ms"`
	MaxRSSKiB int64   `json:"max_rss_kib"`
	Exit      int     `json:"exit"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "table":
		if len(os.Args) != 3 {
			usage()
		}
		var ok bool
		ok, err = tableCmd(os.Args[2], os.Stdout)
		if err == nil && !ok {
			os.Exit(1)
		}
	case "sameinv":
		if len(os.Args) != 4 {
			usage()
		}
		err = sameInventory(os.Args[2], os.Args[3])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labspeed:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: labspeed run -o FILE -config NAME -devices N -qps N -round N -label LABEL -- CMD [ARG...]\n       labspeed table FILE\n       labspeed sameinv REPORT1 REPORT2")
	os.Exit(2)
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	out := fs.String("o", "", "JSON lines file to append to")
	s := Sample{}
	fs.StringVar(&s.Config, "config", "", "configuration name")
	fs.IntVar(&s.Devices, "devices", 0, "RDMA devices in this configuration")
	fs.IntVar(&s.QPs, "qps", 0, "QPs held in this configuration")
	fs.IntVar(&s.Round, "round", 0, "round number")
	fs.StringVar(&s.Label, "label", "", "command label (ibv_devinfo, rdma_res_qp, start, check_noprobe, check, only_qpcq)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	if *out == "" || s.Config == "" || s.Label == "" || len(argv) == 0 {
		usage()
	}
	if err := measure(&s, argv); err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal(s)
	_, err = f.Write(append(b, '\n'))
	return err
}

// measure runs argv directly (no shell, so the rusage is the command's own), output discarded:
// the commands are timed as a monitoring job runs them, not as a terminal prints them.
func measure(s *Sample, argv []string) error {
	s.Command = joinArgs(argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	err := cmd.Run()
	s.WallMS = float64(time.Since(start).Microseconds()) / 1000
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		s.Exit = ee.ExitCode()
	case err != nil:
		return err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return errors.New("no rusage for " + s.Command)
	}
	s.CPUMS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
	s.MaxRSSKiB = ru.Maxrss
	return nil
}

func joinArgs(argv []string) string {
	s := ""
	for i, a := range argv {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

func tableCmd(file string, w io.Writer) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var samples []Sample
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return false, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		samples = append(samples, s)
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if len(samples) == 0 {
		return false, fmt.Errorf("%s: no samples", file)
	}
	return printTable(w, samples), nil
}

// sameInventory fails unless two reports (rdmadiag check or inventory, JSON) describe the
// devices alike: a run that takes the GID tables from the verbs query must show what the sysfs
// walk shows.
func sameInventory(a, b string) error {
	read := func(p string) (any, error) {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Host struct {
				Inventory any `json:"inventory"`
			} `json:"host"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if doc.Host.Inventory == nil {
			return nil, fmt.Errorf("%s: no host.inventory", p)
		}
		return doc.Host.Inventory, nil
	}
	x, err := read(a)
	if err != nil {
		return err
	}
	y, err := read(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(x, y) {
		jx, _ := json.MarshalIndent(x, "", "  ")
		jy, _ := json.MarshalIndent(y, "", "  ")
		return fmt.Errorf("inventories differ:\n%s:\n%s\n%s:\n%s", a, jx, b, jy)
	}
	fmt.Printf("same inventory: %s %s\n", a, b)
	return nil
}
