package fleet

import (
	"context"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

// A host whose report was collected twice (a re-run, a copy in two directories) must count
// once, with its newest report. The aggregate cannot take a report back once added (its name
// lists keep only the first names), so Consume reads the inputs a second time when the first
// reading found a host twice, and then adds only each host's newest report. What is kept to
// find them is an index of fixed size per host (a hash of its name, the newest start time, a
// hash of that report's source), not the reports.

// hostIndex finds each host's newest report.
type hostIndex struct {
	seed maphash.Seed
	m    map[uint64]newest
	// repeated counts the hosts with more than one report that has tool.started; untimed
	// those with more than one report that has none.
	repeated, untimed int
	// repeatedNames names the repeated hosts (only those: the index stays small), and kept
	// marks those the second reading added a report of: a host whose reports changed between
	// the two readings must not vanish from the fleet.
	repeatedNames map[uint64]string
	kept          map[uint64]bool
}

// newest identifies the report of a host that is kept.
type newest struct {
	started int64  // tool.started in Unix nanoseconds
	src     uint64 // sourceHash of the report's input name
	n       int32  // reports of this host with tool.started
	// untimed counts the reports of this host without tool.started: which of them is newest
	// cannot be told, so each is counted (rdmadiag writes tool.started in every report but
	// the goldens of its tests).
	untimed int32
}

func newHostIndex() *hostIndex {
	return &hostIndex{seed: maphash.MakeSeed(), m: map[uint64]newest{}, repeatedNames: map[uint64]string{}, kept: map[uint64]bool{}}
}

// key hashes a host name with a seed of this run, so that a report cannot choose a name that
// collides with another host's.
func (x *hostIndex) key(host string) uint64 { return maphash.String(x.seed, host) }

// sourceHash orders two reports of a host with the same start time (the same report collected
// twice) the same way in every run and whatever order they are read in.
func sourceHash(source string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, source)
	return h.Sum64()
}

// dedupable says whether a record is a report that names its host, which other reports may
// name too (a failed input or a report without host.hostname is named by its input).
func dedupable(r *hostRecord) bool { return r.failed == "" && r.errorDoc == "" && r.named }

// note adds a record of the first reading.
func (x *hostIndex) note(r *hostRecord) {
	if !dedupable(r) {
		return
	}
	k := x.key(r.host)
	e := x.m[k]
	if r.started == nil {
		if e.untimed++; e.untimed == 2 {
			x.untimed++
		}
		x.m[k] = e
		return
	}
	s, src := r.started.UnixNano(), sourceHash(r.source)
	if e.n++; e.n == 2 {
		x.repeated++
		x.repeatedNames[k] = r.host
	}
	if e.n == 1 || s > e.started || s == e.started && src > e.src {
		e.started, e.src = s, src
	}
	x.m[k] = e
}

// older returns, for a record of the second reading that is not its host's newest report, why
// it is left out; "" for a record to add.
func (x *hostIndex) older(r *hostRecord) string {
	if !dedupable(r) || r.started == nil {
		return ""
	}
	k := x.key(r.host)
	e, ok := x.m[k]
	if !ok || e.n < 2 {
		return "" // a host seen once (or an input that appeared since the first reading)
	}
	s := r.started.UnixNano()
	when := "started " + r.started.UTC().Format(time.RFC3339)
	// The newest of the first reading, or a report rewritten since with a later start (a
	// collector writing while fleet reads): the first of these the second reading meets is kept.
	if s == e.started && sourceHash(r.source) == e.src || s > e.started {
		if !x.kept[k] {
			x.kept[k] = true
			return ""
		}
		return fmt.Sprintf("%s, %s: another report of this host was used (the inputs changed while they were read)", r.source, when)
	}
	switch {
	case s == e.started:
		return fmt.Sprintf("%s, %s: the same start time as the report of this host that is used (a copy)", r.source, when)
	default:
		return fmt.Sprintf("%s, %s: older than the host's newest report, started %s (%d reports of this host)", r.source, when,
			time.Unix(0, e.started).UTC().Format(time.RFC3339), e.n)
	}
}

// vanished lists the repeated hosts the second reading kept no report of: their inputs changed
// or disappeared between the two readings.
func (x *hostIndex) vanished() []string {
	var out []string
	for k, name := range x.repeatedNames {
		if !x.kept[k] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// spools keeps a copy of the inputs that can be read only once (standard input) in temporary
// files during the first reading, so that a second reading reads the same bytes.
type spools struct {
	mu    sync.Mutex
	files map[string]string // input name and occurrence -> temporary file
	err   error             // why a copy could not be kept
}

// first wraps the inputs of the first reading.
func (s *spools) first(inputs func(yield func(Input) bool)) func(yield func(Input) bool) {
	return func(yield func(Input) bool) {
		seen := map[string]int{}
		for in := range inputs {
			if in.Once {
				seen[in.Name]++
				id := in.Name + "#" + strconv.Itoa(seen[in.Name])
				open := in.Open
				in.Open = func(ctx context.Context) (io.ReadCloser, error) {
					rc, err := open(ctx)
					if err != nil {
						return rc, err
					}
					f, err := os.CreateTemp("", "rdmadiag-fleet-*")
					s.mu.Lock()
					defer s.mu.Unlock()
					if err != nil {
						s.err = fmt.Errorf("keep a copy of %s: %w", in.Name, err)
						return rc, nil
					}
					if s.files == nil {
						s.files = map[string]string{}
					}
					s.files[id] = f.Name()
					return teeCloser{io.TeeReader(rc, &spoolWriter{f: f, s: s, name: in.Name}), rc, f}, nil
				}
			}
			if !yield(in) {
				return
			}
		}
	}
}

// again yields the inputs of the second reading: the copies instead of the inputs read once.
func (s *spools) again(inputs func(yield func(Input) bool)) func(yield func(Input) bool) {
	return func(yield func(Input) bool) {
		seen := map[string]int{}
		for in := range inputs {
			if in.Once {
				seen[in.Name]++
				p := s.files[in.Name+"#"+strconv.Itoa(seen[in.Name])]
				in.Open = func(context.Context) (io.ReadCloser, error) {
					f, err := os.Open(p)
					if err != nil {
						return nil, fmt.Errorf("read the copy of %s: %w", in.Name, err)
					}
					return f, nil
				}
			}
			if !yield(in) {
				return
			}
		}
	}
}

func (s *spools) remove() {
	for _, p := range s.files {
		os.Remove(p)
	}
}

// spoolWriter writes the copy; a failed write (a full disk) stops the copying and is
// remembered, instead of failing the reading of the input itself: the reports are still counted,
// only the removal of a repeated host's older reports is given up (Consume says so).
type spoolWriter struct {
	f    *os.File
	s    *spools
	name string
	err  error
}

func (w *spoolWriter) Write(b []byte) (int, error) {
	if w.err != nil {
		return len(b), nil
	}
	if _, err := w.f.Write(b); err != nil {
		w.err = err
		w.s.mu.Lock()
		w.s.err = fmt.Errorf("keep a copy of %s: %w", w.name, err)
		w.s.mu.Unlock()
	}
	return len(b), nil
}

type teeCloser struct {
	io.Reader
	in   io.Closer
	copy *os.File
}

func (t teeCloser) Close() error {
	err := t.copy.Close()
	if cerr := t.in.Close(); err == nil {
		err = cerr
	}
	return err
}
