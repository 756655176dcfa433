package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Input is one source of reports: a file (one report, or several concatenated) or stdin.
type Input struct {
	Name string
	// Open opens the input; a read of what it returns ends when ctx ends.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Once marks an input that can be read only once (standard input): Consume keeps a copy of
	// it for a second reading.
	Once bool
}

// Inputs yields the inputs a command line names: files as given, directories walked
// recursively for *.json (symbolic links to directories are not followed, so a loop cannot
// trap the walk), and "-" for stdin. A path that cannot be read yields an input whose Open
// fails, so that it is reported as failed rather than forgotten. The walk reads directories in
// batches and keeps no list of what it found. Opening a FIFO and reading stdin or a FIFO end when
// the context given to Open ends (interrupt.go).
func Inputs(paths []string, stdin io.Reader) iter.Seq[Input] {
	return func(yield func(Input) bool) {
		for _, p := range paths {
			if p == "-" {
				if !yield(Input{Name: "-", Open: func(ctx context.Context) (io.ReadCloser, error) {
					if regular(stdin) {
						return io.NopCloser(stdin), nil // a file redirected to it: never closed here
					}
					return interruptible(ctx, io.NopCloser(stdin)), nil
				}, Once: true}) {
					return
				}
				continue
			}
			fi, err := os.Stat(p)
			if err != nil || !fi.IsDir() {
				if !yield(fileInput(p, err)) {
					return
				}
				continue
			}
			if !walk(p, yield) {
				return
			}
		}
	}
}

func fileInput(p string, statErr error) Input {
	return Input{Name: p, Open: func(ctx context.Context) (io.ReadCloser, error) {
		if statErr != nil {
			return nil, statErr
		}
		return openInput(ctx, p)
	}}
}

// walk yields the *.json files under dir; false when the consumer stopped.
func walk(dir string, yield func(Input) bool) bool {
	f, err := os.Open(dir)
	if err != nil {
		return yield(fileInput(dir, err))
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			t := e.Type()
			if t&fs.ModeSymlink != 0 {
				fi, err := os.Stat(p)
				if err != nil || fi.IsDir() {
					continue // a dangling link or a linked directory: not walked
				}
				t = fi.Mode().Type()
			}
			switch {
			case t.IsDir():
				if !walk(p, yield) {
					return false
				}
			case t.IsRegular() && strings.HasSuffix(e.Name(), ".json"):
				if !yield(fileInput(p, nil)) {
					return false
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return yield(fileInput(dir, err))
		}
	}
}

// Consume reads every input and adds one report per host to the aggregate: each host's newest
// report (by tool.started). When a host has several reports, the inputs are read a second time
// (standard input from a copy kept during the first reading) and the older ones are left out,
// and named (Result.Duplicates). inputs must yield the same inputs each time it is iterated.
// When ctx ends (a signal) Consume stops taking inputs, the reads in progress end with the
// context's cause, and it returns soon after: the aggregate is then partial, and the caller
// must not present it as the fleet's.
func (a *Aggregator) Consume(ctx context.Context, inputs iter.Seq[Input], workers int) {
	idx := newHostIndex()
	var sp spools
	defer sp.remove()
	a.consume(ctx, sp.first(inputs), workers, func(r hostRecord) {
		idx.note(&r)
		a.add(r)
	})
	if idx.untimed > 0 {
		a.untimedNote = fmt.Sprintf("%d host(s) have more than one report without tool.started: each of those reports is counted, "+
			"since which is newest cannot be told", idx.untimed)
	}
	if idx.repeated == 0 || ctx.Err() != nil {
		return
	}
	if sp.err != nil {
		a.dupNote = fmt.Sprintf("%d host(s) have more than one report, and each of them was counted: %v", idx.repeated, sp.err)
		return
	}
	untimed := a.untimedNote
	*a = *NewAggregator(a.o)
	a.untimedNote = untimed
	a.consume(ctx, sp.again(inputs), workers, func(r hostRecord) {
		if why := idx.older(&r); why != "" {
			a.reports++
			a.dups.add(r.host, why)
			return
		}
		a.add(r)
	})
	for _, host := range idx.vanished() {
		a.failed.add(host, "its reports changed or disappeared between the two readings of the inputs; read them again")
	}
}

// consume reads every input with workers decoding in parallel and hands each host record to
// use from this goroutine. At most workers reports are held decoded at a time. No input is
// taken once ctx has ended.
func (a *Aggregator) consume(ctx context.Context, inputs iter.Seq[Input], workers int, use func(hostRecord)) {
	if workers < 1 {
		workers = 1
	}
	in := make(chan Input)
	out := make(chan hostRecord, 4*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var f framer
			emit := func(r hostRecord) { out <- r }
			for inp := range in {
				rc, err := inp.Open(ctx)
				if err != nil {
					emit(hostRecord{host: clean(inp.Name), source: clean(inp.Name), failed: unreadable(err)})
					continue
				}
				f.decodeStream(inp.Name, rc, emit)
				rc.Close()
			}
		})
	}
	go func() {
		for inp := range inputs {
			if ctx.Err() != nil {
				break
			}
			in <- inp
		}
		close(in)
		wg.Wait()
		close(out)
	}()
	for r := range out {
		use(r)
	}
}

func unreadable(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
