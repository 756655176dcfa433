// Command totxtar stores a recorded snapshot (the tar.gz `rdmadiag record` writes) as the text
// archive a fixture keeps, fixtures/sysfs/<scenario>/snapshot.txtar, so that a re-recording is
// reviewed as a diff of the files it changed. The bytes stay identical: the archive is unpacked,
// written with snapshot.PackTxtar, and unpacked again to compare before anything is written.
//
//	go run ./lab/totxtar -scenario aer -readme fixtures/sysfs/aer/README.md \
//	    -o fixtures/sysfs/aer/snapshot.txtar lab/out/fixtures/aer/out/snapshot.tar.gz
//
// The archive's comment says how the snapshot was recorded (-head, by default the lab's
// Soft-RoCE guest) followed by the fixture's README.md, which lab/fixtures.sh writes first.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

func main() {
	scenario := flag.String("scenario", "", "the lab scenario the snapshot was recorded in (lab/scenarios/NAME.sh)")
	readme := flag.String("readme", "", "the fixture's README.md, appended to the comment")
	head := flag.String("head", "", "the comment's first paragraph, instead of the lab's (for a snapshot recorded elsewhere)")
	out := flag.String("o", "", "the text archive to write")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: totxtar -scenario NAME [-readme README.md] [-head TEXT] -o snapshot.txtar recorded.tar.gz")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *out == "" || (*scenario == "" && *head == "") {
		flag.Usage()
		os.Exit(64)
	}
	if err := convert(flag.Arg(0), *out, *scenario, *head, *readme); err != nil {
		fmt.Fprintln(os.Stderr, "totxtar:", err)
		os.Exit(1)
	}
}

func convert(in, out, scenario, head, readme string) error {
	comment, err := commentFor(scenario, head, readme)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "totxtar-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src, dst := filepath.Join(tmp, "recorded"), filepath.Join(tmp, "text")
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	err = snapshot.Unpack(f, src)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	text, err := snapshot.PackTxtar(src, comment)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := snapshot.UnpackTxtar(text, dst); err != nil {
		return fmt.Errorf("%s: the text form does not unpack: %w", in, err)
	}
	if err := sameTree(src, dst); err != nil {
		return fmt.Errorf("%s: the text form unpacks to another tree: %w", in, err)
	}
	return os.WriteFile(out, text, 0o644)
}

// commentFor is the archive's comment: how it was recorded, then the fixture's README.md without
// its title.
func commentFor(scenario, head, readme string) (string, error) {
	if head == "" {
		head = fmt.Sprintf("Recorded in the lab (scenario %s, Debian 12 kernel 6.1, Soft-RoCE) with `rdmadiag record --redact`;\n"+
			"text form of the recording, written by lab/totxtar. Not synthetic: re-record it with `make fixtures`.", scenario)
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(head) + "\n")
	if readme != "" {
		r, err := os.ReadFile(readme)
		if err != nil {
			return "", err
		}
		body := strings.TrimSpace(string(r))
		if strings.HasPrefix(body, "# ") {
			_, body, _ = strings.Cut(body, "\n")
		}
		b.WriteString("\n" + strings.TrimSpace(body) + "\n")
	}
	return b.String(), nil
}

// sameTree compares two unpacked snapshots: every path, file content and link target.
func sameTree(a, b string) error {
	ta, err := listTree(a)
	if err != nil {
		return err
	}
	tb, err := listTree(b)
	if err != nil {
		return err
	}
	for k, v := range ta {
		if w, ok := tb[k]; !ok {
			return fmt.Errorf("%s is missing", k)
		} else if !bytes.Equal(v, w) {
			return fmt.Errorf("%s differs", k)
		}
	}
	for k := range tb {
		if _, ok := ta[k]; !ok {
			return fmt.Errorf("%s is extra", k)
		}
	}
	return nil
}

func listTree(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel := strings.TrimPrefix(p, dir+string(filepath.Separator))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[rel] = []byte("link " + l)
			return err
		case d.IsDir():
			out[rel] = []byte("dir")
		default:
			body, err := os.ReadFile(p)
			out[rel] = append([]byte("file "), body...)
			return err
		}
		return nil
	})
	return out, err
}
