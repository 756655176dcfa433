package xcvr

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// pageKey names one 128-byte page as ethtool's MODULE_EEPROM_GET addresses it; the lower page
// is page 0 with upper false.
type pageKey struct {
	i2c, page, bank uint8
	upper           bool
}

// eeprom is a module memory built field by field at the offsets the specifications give, and
// served through PageReader. Pages not written do not exist (ReadPage fails with ENODATA-like
// errors), as for a module that does not implement them.
type eeprom struct {
	pages map[pageKey][]byte
	errs  map[pageKey]error
	reads []pageKey
}

func newEEPROM() *eeprom {
	e := &eeprom{pages: map[pageKey][]byte{}, errs: map[pageKey]error{}}
	e.page(0, false) // lower page
	e.page(0, true)  // upper page 00h
	return e
}

var errNoPage = errors.New("page not implemented by the module")

func (e *eeprom) ReadPage(i2c, pg, bank uint8, off, n uint32) ([]byte, error) {
	if off != 0 && off != pageSize || n != pageSize {
		return nil, fmt.Errorf("unexpected request offset %d length %d", off, n)
	}
	k := pageKey{i2c, pg, bank, off == pageSize}
	if !k.upper {
		k.page, k.bank = 0, 0
	}
	e.reads = append(e.reads, k)
	if err := e.errs[k]; err != nil {
		return nil, err
	}
	p, ok := e.pages[k]
	if !ok {
		return nil, errNoPage
	}
	return append([]byte(nil), p...), nil
}

func (e *eeprom) page(pg uint8, upper bool) []byte {
	k := pageKey{i2cModule, pg, 0, upper}
	if e.pages[k] == nil {
		e.pages[k] = make([]byte, pageSize)
	}
	return e.pages[k]
}

// put writes bytes at a byte address of page pg: 0-127 in the lower page, 128-255 in upper
// page pg (the addressing the specifications' tables use).
func (e *eeprom) put(pg uint8, addr int, b ...byte) {
	for i, v := range b {
		a := addr + i
		if a < pageSize {
			e.page(0, false)[a] = v
		} else {
			e.page(pg, true)[a-pageSize] = v
		}
	}
}

func (e *eeprom) put16(pg uint8, addr int, v uint16) { e.put(pg, addr, byte(v>>8), byte(v)) }

// str writes s space-padded to n bytes, as vendor fields are stored.
func (e *eeprom) str(pg uint8, addr, n int, s string) {
	b := []byte(fmt.Sprintf("%-*s", n, s))
	e.put(pg, addr, b[:n]...)
}

func (e *eeprom) setBit(pg uint8, addr int, bit uint) {
	var cur byte
	if addr < pageSize {
		cur = e.page(0, false)[addr]
	} else {
		cur = e.page(pg, true)[addr-pageSize]
	}
	e.put(pg, addr, cur|1<<bit)
}

func (e *eeprom) read(k pageKey) bool {
	for _, r := range e.reads {
		if r == k {
			return true
		}
	}
	return false
}

// Raw encodings of the units both specifications use.
func rawTemp(c float64) uint16  { return uint16(int16(c * 256)) }
func rawVolts(v float64) uint16 { return uint16(v*10000 + 0.5) }
func rawMW(mw float64) uint16   { return uint16(mw*10000 + 0.5) }
func rawMA(ma float64) uint16   { return uint16(ma*1000/2 + 0.5) }

// putThresholds writes high alarm, low alarm, high warning, low warning at addr.
func (e *eeprom) putThresholds(pg uint8, addr int, raw func(float64) uint16, ha, la, hw, lw float64) {
	for i, v := range []float64{ha, la, hw, lw} {
		e.put16(pg, addr+2*i, raw(v))
	}
}

// loadDump reads a testdata hex dump: "# ..." comment lines, then "page NNh lower|upper" section
// headers followed by lines "OFFSET: hex bytes" with OFFSET the byte address (0-255).
func loadDump(t *testing.T, path string) *eeprom {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := &eeprom{pages: map[pageKey][]byte{}, errs: map[pageKey]error{}}
	var pg uint8
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "page ") {
			fs := strings.Fields(line)
			v, err := strconv.ParseUint(strings.TrimSuffix(fs[1], "h"), 16, 8)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			pg = uint8(v)
			e.page(pg, true)
			if pg == 0 {
				e.page(0, false)
			}
			continue
		}
		off, rest, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s: %q", path, line)
		}
		a, err := strconv.ParseUint(strings.TrimPrefix(off, "0x"), 16, 16)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		for i, h := range strings.Fields(rest) {
			b, err := strconv.ParseUint(h, 16, 8)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			e.put(pg, int(a)+i, byte(b))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return e
}

// verdictKey is what a test asserts of a verdict.
type verdictKey struct {
	Kind     VerdictKind
	Level    Level
	Quantity Quantity
	Lane     int
	Bound    Bound
	Flag     FlagKind
}

func keys(vs []Verdict) []verdictKey {
	var out []verdictKey
	for _, v := range vs {
		out = append(out, verdictKey{v.Kind, v.Level, v.Quantity, v.Lane, v.Bound, v.Flag})
	}
	return out
}

func sameKeys(t *testing.T, got []Verdict, want []verdictKey) {
	t.Helper()
	g := keys(got)
	if len(g) != len(want) {
		t.Fatalf("verdicts:\n%s\nwant %v", dump(got), want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Fatalf("verdict %d = %+v, want %+v\nall:\n%s", i, g[i], want[i], dump(got))
		}
	}
}

func dump(vs []Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

// judgeCase is one change to a healthy module's memory and what Judge must say of it: the
// verdicts' keys in order, and prefixes of the first verdicts' String().
type judgeCase struct {
	name   string
	mutate func(e *eeprom)
	want   []verdictKey
	lines  []string
}

// runJudgeCases runs each case as a subtest on a fresh healthy module from build.
func runJudgeCases(t *testing.T, build func() *eeprom, cases []judgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := build()
			c.mutate(e)
			m, err := Read(e)
			if err != nil {
				t.Fatal(err)
			}
			vs := Judge(m)
			sameKeys(t, vs, c.want)
			for i, l := range c.lines {
				if !strings.HasPrefix(vs[i].String(), l) {
					t.Errorf("line %d = %q, want prefix %q", i, vs[i].String(), l)
				}
			}
		})
	}
}
