// Command sigscan measures how many of a kernel tree's RDMA driver messages the kernel log
// table recognises, and writes entries for the ones it does not (docs/kernel-log.md, Coverage):
//
//	go run ./internal/kevent/sigscan/cmd/sigscan -kernel /tmp/k612 [-missing] [-skipped]
//	go run ./internal/kevent/sigscan/cmd/sigscan -gen mlx-scan.json [-family mlx] \
//	    -kernels 4.19.304=/tmp/k419,5.4.214=/tmp/k54,...,6.12.19=/tmp/k612 -foreign /tmp/f612
//
// Releases are named as sigscan.Trees cites them.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kevent/sigscan"
)

func main() {
	kernel := flag.String("kernel", "", "an extracted kernel source tree (or the drivers' part of one)")
	missing := flag.Bool("missing", false, "list the formats no entry recognises")
	skipped := flag.Bool("skipped", false, "list the prints not counted, with why")
	covered := flag.Bool("covered", false, "list the formats recognised, with the entry")
	driver := flag.String("driver", "", "only this driver (mlx5_core, mlx4_en, ...)")
	gen := flag.String("gen", "", "write the entries for the missing formats to this file of -signatures")
	family := flag.String("family", "mlx", "with -gen: the drivers whose entries the file holds (mlx, vendors, consumers, pcie)")
	kernels := flag.String("kernels", "", "with -gen: release=DIR,... oldest first, each release named as sigscan.Trees cites it")
	sigs := flag.String("signatures", "internal/kevent/signatures", "with -gen: the signature files' directory")
	without := flag.String("without", "", "with -kernel: measure the table of -signatures without this file (mlx-scan.json: the hand-written entries alone)")
	foreign := flag.String("foreign", "", "with -gen: DIR,... trees of other drivers, whose lines no generated entry may recognise")
	flag.Parse()
	var err error
	switch {
	case *gen != "":
		err = generate(*sigs, *gen, *family, *kernels, *foreign)
	case *kernel != "":
		err = run(*kernel, *driver, *sigs, *without, *missing, *skipped, *covered)
	default:
		fmt.Fprintln(os.Stderr, "sigscan: -kernel DIR or -gen FILE -kernels REL=DIR,... is required")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sigscan:", err)
		os.Exit(1)
	}
}

func run(dir, driver, sigs, without string, missing, skipped, covered bool) error {
	tb, err := kevent.Default()
	if without != "" {
		tb, err = sigscan.LoadWithout(os.DirFS(sigs), without)
	}
	if err != nil {
		return err
	}
	tree, err := sigscan.ReadTree(dir)
	if err != nil {
		return err
	}
	var prints []sigscan.DriverPrint
	for _, p := range tree.Prints() {
		if driver == "" || p.Driver.Name == driver {
			prints = append(prints, p)
		}
	}
	rs := sigscan.Check(tb, prints)
	for _, r := range rs {
		where := fmt.Sprintf("%s:%d %s()", r.File, r.Line, r.Func)
		switch {
		case missing && r.Missing():
			fmt.Printf("missing  %-9s %-5s %s %q\n", r.Driver.Name, r.Level, where, r.Message())
		case skipped && r.Skip != "":
			fmt.Printf("skipped  %-9s %-5s %s %q (%s)\n", r.Driver.Name, r.Level, where, r.Message(), r.Skip)
		case covered && r.Covered():
			fmt.Printf("covered  %-9s %-5s %s %q by %s\n", r.Driver.Name, r.Level, where, r.Message(), r.By.ID)
		}
	}
	fmt.Printf("%-10s %8s %8s %8s %9s\n", "driver", "covered", "missing", "skipped", "coverage")
	for _, t := range sigscan.Tallies(rs) {
		share := 0.0
		if n := t.Covered + t.Missing; n > 0 {
			share = 100 * float64(t.Covered) / float64(n)
		}
		fmt.Printf("%-10s %8d %8d %8d %8.0f%%\n", t.Driver, t.Covered, t.Missing, t.Skipped, share)
	}
	return nil
}

func generate(sigs, out, family, list, foreign string) error {
	var ks []sigscan.Kernel
	for _, kv := range strings.Split(list, ",") {
		rel, dir, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-kernels: %q is not release=DIR", kv)
		}
		t, err := sigscan.ReadTree(dir)
		if err != nil {
			return err
		}
		ks = append(ks, sigscan.Kernel{Release: rel, Tree: t})
	}
	var fs []*sigscan.Tree
	for _, dir := range strings.Split(foreign, ",") {
		if dir == "" {
			continue
		}
		t, err := sigscan.ReadTree(dir)
		if err != nil {
			return err
		}
		fs = append(fs, t)
	}
	g, err := sigscan.Generate(os.DirFS(sigs), out, family, ks, fs)
	if err != nil {
		return err
	}
	b, err := g.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sigs, out), b, 0o644); err != nil {
		return err
	}
	for _, d := range g.Dropped {
		fmt.Printf("dropped  %-9s %q: %s\n", d.Driver, d.Format, d.Why)
	}
	fmt.Printf("%d entries written to %s, %d formats left out\n", len(g.Signatures), filepath.Join(sigs, out), len(g.Dropped))
	return nil
}
