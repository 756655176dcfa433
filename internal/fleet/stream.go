package fleet

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxReport bounds one report: a host with 100k QPs writes a few MB; anything far larger is
// not a report and must not take the memory of the whole run.
const maxReport = 64 << 20

var errTooLarge = errors.New("too large")

// framer splits a stream into top-level JSON values without decoding them: a file holds one
// report or several written one after another, and so may stdin. Its buffer is reused from
// one input to the next and grows to the largest report read, at most maxReport.
type framer struct {
	r          io.Reader
	buf        []byte
	start, end int   // buf[start:end] is read but not yet returned
	off        int64 // stream offset of buf[start]
	eof        bool
	limit      int
	// lim bounds the fields of each report (defaultLimits when zero; tests make them tiny).
	lim limits
	// initial is the first size of buf (256 KiB; tests make it tiny to move the ends of
	// reads across every byte of a report).
	initial int
}

func (f *framer) reset(r io.Reader) {
	f.r, f.start, f.end, f.off, f.eof = r, 0, 0, 0, false
	if f.limit == 0 {
		f.limit = maxReport
	}
	if f.initial == 0 {
		f.initial = 256 << 10
	}
	if f.lim == (limits{}) {
		f.lim = defaultLimits
	}
}

// next decodes the next report of the stream into d and returns its offset; io.EOF at the end.
// A report is decoded where it lies in the buffer, in one pass; only when it does not decode is
// it framed (its end found without decoding) so that the stream can go on after it, and the
// decoding error is then returned as bad. A value that cannot be framed (brackets that do not
// match, an unterminated string), or that is not an object, ends the stream: nothing after it
// can be found, or nothing after it is a report.
func (f *framer) next(d *doc) (off int64, bad, err error) {
	for {
		p := parser{b: f.buf[f.start:f.end]}
		p.ws()
		f.start += p.i
		f.off += int64(p.i)
		if f.start == f.end {
			if f.eof {
				return f.off, nil, io.EOF
			}
			if err := f.fill(); err != nil {
				return f.off, nil, err
			}
			continue
		}
		if c := f.buf[f.start]; c != '{' {
			// A stream of reports holds objects only: anything else (a text file, a log) is not
			// one, and framing its words or lines would count each as a failed report.
			return f.off, nil, fmt.Errorf("at byte %d: not a report: a report is a JSON object, and this begins with %q", f.off, c)
		}
		p = parser{b: f.buf[f.start:f.end], lim: f.lim}
		*d = doc{}
		perr := p.document(d)
		if perr == nil {
			off = f.off
			f.start += p.i
			f.off += int64(p.i)
			return off, nil, nil
		}
		// The report did not decode here: frame it (find its end without decoding) to go on
		// after it, or learn that more of the stream must be read first.
		q := parser{b: f.buf[f.start:f.end]}
		err := q.skip()
		if errors.Is(err, errShort) && f.eof && q.i == f.end-f.start && !isOpen(f.buf[f.start]) {
			err = nil // a number or literal that ends with the stream
		}
		if errors.Is(err, errShort) && !f.eof {
			if f.end-f.start >= f.limit {
				return f.off, nil, f.tooLarge()
			}
			if err := f.fill(); err != nil {
				return f.off, nil, err
			}
			continue
		}
		switch {
		case err == nil:
			off = f.off
			f.start += q.i
			f.off += int64(q.i)
			return off, perr, nil
		case errors.Is(err, errShort):
			return f.off, nil, fmt.Errorf("at byte %d: the report ends before its last bracket (truncated)", f.off)
		default:
			return f.off, nil, fmt.Errorf("at byte %d: %w", f.off+int64(q.i), err)
		}
	}
}

func (f *framer) tooLarge() error {
	return fmt.Errorf("at byte %d: larger than %d bytes: not a report (%w)", f.off, f.limit, errTooLarge)
}

func isOpen(c byte) bool { return c == '{' || c == '[' || c == '"' }

// fill reads until the buffer is full or the stream ends, doubling the buffer when the value
// in it fills it: a value of n bytes is then scanned O(log n) times, however small the reads.
func (f *framer) fill() error {
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	if f.end == len(f.buf) {
		n := max(2*len(f.buf), f.initial)
		n = min(n, f.limit+1)
		if n <= len(f.buf) {
			return f.tooLarge()
		}
		nb := make([]byte, n)
		copy(nb, f.buf[:f.end])
		f.buf = nb
	}
	for f.end < len(f.buf) {
		n, err := f.r.Read(f.buf[f.end:])
		f.end += n
		if errors.Is(err, io.EOF) {
			f.eof = true
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeStream reads every report of one input and hands each host record to emit.
func (f *framer) decodeStream(name string, r io.Reader, emit func(hostRecord)) {
	f.reset(r)
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s#%d", name, i)
		}
		var d doc
		off, bad, err := f.next(&d)
		if errors.Is(err, io.EOF) {
			if i == 1 {
				emit(hostRecord{host: clean(n), source: clean(n), failed: "empty: no report in it"})
			}
			return
		}
		if err != nil {
			if i > 1 {
				err = fmt.Errorf("%w (the rest of the stream is not read)", err)
			}
			emit(hostRecord{host: clean(n), source: clean(n), failed: clean(shorten(err.Error()))})
			return
		}
		if bad != nil {
			msg := "not a report: " + bad.Error()
			if _, ok := bad.(*limitError); ok {
				msg = "over fleet's limits, not read: " + bad.Error()
			}
			if off > 0 {
				msg += fmt.Sprintf(" (in the report at byte %d)", off)
			}
			emit(hostRecord{host: clean(n), source: clean(n), failed: clean(shorten(msg))})
			continue
		}
		emit(reduce(&d, n))
	}
}

// maxReason bounds the reason a report failed: it may quote the report (a time that does not
// parse), and a reason is one line in a list.
const maxReason = 1024

func shorten(s string) string {
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
