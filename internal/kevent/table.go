package kevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmadiag/rdmadiag/internal/relit"
	"github.com/rdmadiag/rdmadiag/report"
)

// Driver is a module (or kernel subsystem) that prints kernel log lines, and how its lines
// start: a record beginning with one of its prefixes is that driver's.
type Driver struct {
	Name     string   `json:"name"`
	Layer    string   `json:"layer"`
	Prefixes []string `json:"prefixes"`
	// Device says what follows a prefix: "pci" a PCI function and ": " (dev_printk on a PCI
	// device: "mlx5_core 0000:3b:00.0: "), "net" a PCI function, a netdev and ": "
	// (netdev_printk: "mlx5_core 0000:3b:00.0 ens1f0np0: "), "ib" an RDMA device name and ": "
	// (ibdev_printk: "infiniband mlx5_0: "), "" nothing (pr_fmt prefixes such as "DMAR: ").
	Device string `json:"device,omitempty"`
	// Example is how its lines start when the prefix is another driver's (net core messages
	// printed through the netdev's driver): "mlx5_core 0000:3b:00.0 ens1f0np0: ".
	Example string `json:"example,omitempty"`
	Source  string `json:"source"`
}

// Args names, by 1-based conversion index, what a signature's conversions hold.
type Args struct {
	Detail []int `json:"detail,omitempty"`
	Netdev int   `json:"netdev,omitempty"`
	IBDev  int   `json:"ibdev,omitempty"`
	PCI    int   `json:"pci,omitempty"`
	Port   int   `json:"port,omitempty"`
	State  int   `json:"state,omitempty"`
	Module int   `json:"module,omitempty"`
}

// Outcomes of an event's last line.
const (
	OutcomeRecovered = "recovered"
	OutcomeFailed    = "failed"
)

// Kinds of signature.
const (
	KindFault = "fault"
	KindLink  = "link"
	KindDump  = "dump"
)

// Signature is one message a driver prints and what it means.
type Signature struct {
	ID      string   `json:"id"`
	Driver  string   `json:"driver"`
	Format  string   `json:"format"`
	Alt     []string `json:"alt,omitempty"`
	Source  string   `json:"source"`
	Kernels string   `json:"kernels"`
	Level   string   `json:"level"`
	Layer   string   `json:"layer"`
	Fault   string   `json:"fault"`
	// Action, when set, is what a finding drawn from the line asks for instead of its fault
	// row's action (report.Actions; a module built for another stack is rebuilt, not loaded).
	Action   report.Action `json:"action,omitempty"`
	Severity string        `json:"severity"`
	What     string        `json:"what"`
	Fix      string        `json:"fix,omitempty"`
	Args     Args          `json:"args,omitzero"`
	// DetailText, when set, is how the detail reads, with {N} for conversion N ("syndrome
	// 0x{2}"); else the detail conversions' texts joined by spaces.
	DetailText string              `json:"detail,omitempty"`
	Family     string              `json:"family,omitempty"`
	RDMAOnly   bool                `json:"rdma_only,omitempty"`
	Values     map[string][]string `json:"values,omitempty"`
	Kind       string              `json:"kind,omitempty"`
	State      string              `json:"state,omitempty"`
	// Step names the signature's line within its family's event, for a summary that lists what
	// happened ("fatal error", "health buffer dump", "recovery failed").
	Step string `json:"step,omitempty"`
	// Outcome marks the line that ends an event: "recovered" (the driver brought the device
	// back), "failed" (it gave up).
	Outcome string `json:"outcome,omitempty"`
	// HistoryIfRegistered: the line reports a start-up that failed (a probe, a firmware that did
	// not initialise); when the device it is about is registered now, it is history, reported
	// as information.
	HistoryIfRegistered bool `json:"history_if_registered,omitempty"`
	// Meanings names, per conversion, what its values mean (a syndrome, a sensor), for the
	// detail text's {N:meaning}.
	Meanings map[string]map[string]string `json:"meanings,omitempty"`
	// Continued: the driver appends to the line (pr_cont, warn_alloc's mode and nodemask), so
	// the format need not end it.
	Continued bool   `json:"continued,omitempty"`
	Comment   string `json:"_comment,omitempty"`

	// Set by the loader.
	File    string          `json:"-"`
	Sev     report.Severity `json:"-"`
	Benign  bool            `json:"-"`
	values  map[int][]string
	roles   map[int]Role
	formats []Format
	res     []*relit.Regexp
	lits    []int // literal characters of each format
	drv     *Driver
	// scoped: some format is too short to be tried on every line; the signature matches only
	// lines its driver's prefix starts.
	scoped bool
}

// Printer is the driver or subsystem whose source prints the message (not necessarily the one
// whose prefix the line carries: pci_err on an endpoint carries the endpoint driver's name).
func (s *Signature) Printer() *Driver { return s.drv }

// Formats are the signature's format strings, its own first.
func (s *Signature) Formats() []Format { return s.formats }

// Values is the signature's conversions held to listed texts, by conversion index.
func (s *Signature) ValueSets() map[int][]string { return s.values }

// Roles is what each named conversion holds, by conversion index.
func (s *Signature) Roles() map[int]Role { return s.roles }

// Table is every signature and driver, loaded and checked. Between runs it keeps of each
// signature only what tells when a log may hold one of its lines (its formats' literal words)
// and where it lies in its file; the rest is decoded at its first match. watch holds the table
// for as long as it runs, and decoded whole it was most of watch's heap (docs/watch.md).
type Table struct {
	Drivers  []Driver
	drivers  map[string]*Driver
	prefixes []prefix // longest first, so that "mlx5_core " wins over a shorter overlap
	files    []tableText
	entries  []entry
	// One element per format of every signature, in table order.
	owner []int32    // the format belongs to entries[owner[i]]
	fidx  []uint8    // it is that signature's format fidx[i]
	flit  []uint16   // its literal characters (Format.Literal)
	words [][]string // its prefilter: every match contains one of these
	// Every word of its literal text, all of which a match contains: req[reqOff[i]:reqOff[i+1]]
	// index dict, the table's words each kept once (42,000 words of 6,000 distinct, which
	// held as strings of their own were a third of the table's heap).
	reqOff []uint32
	req    []uint32
	dict   []string
	// The opening text of formats the drivers print below KERN_WARNING, spaces folded: a line
	// without a level that holds one is that print (quoted short or changed), not an error.
	quiet   []string
	setOnce sync.Once
	set     *relit.Set // the words, matched in one pass over a log
	mu      sync.Mutex // decoding an entry
}

// tableText is one signatures/*.json file: its base name and its text, which entries point into.
type tableText struct {
	name, text string
}

// entry is a signature as the table keeps it until its first match.
type entry struct {
	file     int32
	off, end int32 // the signature's JSON object in its file's text
	drv      *Driver
	sig      atomic.Pointer[Signature]
}

type prefix struct {
	text   string
	driver *Driver
}

// Layers and severities a signature may name. Faults are checked against the fault table by the
// table's test, which knows report's rows.
var (
	layers     = []string{"pcie", "firmware", "driver", "port", "qp", "cq"}
	severities = map[string]report.Severity{"critical": report.Critical, "warning": report.Warning, "info": report.Info, "benign": report.Info}
	levels     = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}
	kinds      = []string{"", KindFault, KindLink, KindDump}
)

// detailRef is a conversion's place in a detail text: {2}, or its meaning: {2:meaning}.
var detailRef = regexp.MustCompile(`\{(\d+)(:meaning)?\}`)

// MinLiteral is how many literal characters a format needs to be matched on every line of the
// log; a shorter one is tried only on lines its driver's prefix starts.
const MinLiteral = 10

var (
	defaultOnce  sync.Once
	defaultTable *Table
	defaultErr   error
)

// Default is the embedded table, loaded once. An error means a table that fails its own test;
// the caller reports it as the kernel log's part of the run being unknown.
func Default() (*Table, error) {
	defaultOnce.Do(func() { defaultTable, defaultErr = loadTexts(embedded()) })
	return defaultTable, defaultErr
}

// Load reads every signatures/*.json of fsys, strictly, and checks the table as a whole.
func Load(fsys fs.FS) (*Table, error) {
	names, err := fs.Glob(fsys, "signatures/*.json")
	if err != nil {
		return nil, err
	}
	var texts []tableText
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		texts = append(texts, tableText{name: path.Base(name), text: string(b)})
	}
	return loadTexts(texts)
}

// loadTexts decodes and checks every signature of the files, and keeps of each its entry.
func loadTexts(texts []tableText) (*Table, error) {
	sort.Slice(texts, func(i, j int) bool { return texts[i].name < texts[j].name })
	t := &Table{drivers: map[string]*Driver{}, files: texts}
	type decoded struct {
		fi       int
		off, end int64
		sig      *Signature
	}
	var sigs []decoded
	for fi, f := range texts {
		drivers, err := scanFile(f.text, func(off, end int64, s *Signature) {
			sigs = append(sigs, decoded{fi, off, end, s})
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		t.Drivers = append(t.Drivers, drivers...)
	}
	for i := range t.Drivers {
		d := &t.Drivers[i]
		if d.Name == "" || t.drivers[d.Name] != nil {
			return nil, fmt.Errorf("driver %q: empty or listed twice", d.Name)
		}
		if !slices.Contains(layers, d.Layer) {
			return nil, fmt.Errorf("driver %s: layer %q is not one of %v", d.Name, d.Layer, layers)
		}
		if d.Device != "" && d.Device != "pci" && d.Device != "net" && d.Device != "ib" {
			return nil, fmt.Errorf("driver %s: device %q is not pci, net, ib or empty", d.Name, d.Device)
		}
		t.drivers[d.Name] = d
		for _, p := range d.Prefixes {
			if strings.TrimSpace(p) == "" {
				return nil, fmt.Errorf("driver %s: empty prefix", d.Name)
			}
			t.prefixes = append(t.prefixes, prefix{text: p, driver: d})
		}
	}
	sort.SliceStable(t.prefixes, func(i, j int) bool { return len(t.prefixes[i].text) > len(t.prefixes[j].text) })
	var errs []error
	ids := make(map[string]bool, len(sigs))
	t.entries = make([]entry, len(sigs))
	seen := map[string]uint32{}
	intern := func(w string) uint32 {
		id, ok := seen[w]
		if !ok {
			id = uint32(len(t.dict))
			t.dict = append(t.dict, strings.Clone(w)) // a copy: the parsed format is let go
			seen[w] = id
		}
		return id
	}
	t.reqOff = append(t.reqOff, 0)
	for i, d := range sigs {
		s := d.sig
		s.File = texts[d.fi].name
		if s.ID == "" || ids[s.ID] {
			errs = append(errs, fmt.Errorf("%s: signature %q: id empty or given twice", s.File, s.ID))
			continue
		}
		ids[s.ID] = true
		if err := t.prepare(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: signature %q: %w", s.File, s.ID, err))
			continue
		}
		if d.off > math.MaxInt32 || d.end > math.MaxInt32 {
			errs = append(errs, fmt.Errorf("%s: larger than 2 GiB", s.File))
			break
		}
		t.entries[i] = entry{file: int32(d.fi), off: int32(d.off), end: int32(d.end), drv: s.drv}
		for fi, re := range s.res {
			t.owner = append(t.owner, int32(i))
			t.fidx = append(t.fidx, uint8(fi))
			t.flit = append(t.flit, uint16(min(s.lits[fi], math.MaxUint16)))
			lits := re.Literals()
			for li, w := range lits {
				lits[li] = t.dict[intern(w)]
			}
			t.words = append(t.words, lits)
			for _, w := range s.formats[fi].Words() {
				t.req = append(t.req, intern(w))
			}
			if lead := strings.Fields(s.formats[fi].Lead()); quietLevel(s) && len(lead) >= 3 && len(strings.Join(lead, "")) >= 20 {
				t.quiet = append(t.quiet, strings.Join(lead, " "))
			}
			t.reqOff = append(t.reqOff, uint32(len(t.req)))
		}
		if len(s.res) > math.MaxUint8 {
			errs = append(errs, fmt.Errorf("%s: signature %q: more than %d formats", s.File, s.ID, math.MaxUint8))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// scanFile decodes one table file strictly: its drivers, and each signature with where its
// object lies in text.
func scanFile(text string, sig func(off, end int64, s *Signature)) ([]Driver, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	var drivers []Driver
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch tok {
		case "_comment":
			var c string
			err = dec.Decode(&c)
		case "drivers":
			err = dec.Decode(&drivers)
		case "signatures":
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return nil, fmt.Errorf("signatures: not an array (%v)", err)
			}
			for dec.More() {
				off := dec.InputOffset()
				s := new(Signature)
				if err := dec.Decode(s); err != nil {
					return nil, fmt.Errorf("signatures: %w", err)
				}
				sig(off, dec.InputOffset(), s)
			}
			_, err = dec.Token()
		default:
			err = fmt.Errorf("unknown field %v", tok)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the table's object")
	}
	return drivers, nil
}

// sig is entry i's signature, decoded from its file at the first call. The table was checked
// whole when it was loaded, so decoding it again cannot fail short of a corrupted binary.
func (t *Table) sig(i int32) *Signature {
	e := &t.entries[i]
	if s := e.sig.Load(); s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := e.sig.Load(); s != nil {
		return s
	}
	f := t.files[e.file]
	s := new(Signature)
	dec := json.NewDecoder(strings.NewReader(strings.TrimLeft(f.text[e.off:e.end], " \t\r\n,")))
	dec.DisallowUnknownFields()
	err := dec.Decode(s)
	if err == nil {
		s.File = f.name
		err = t.prepare(s)
	}
	if err != nil {
		panic(fmt.Sprintf("kevent: %s: signature at offset %d no longer decodes: %v", f.name, e.off, err))
	}
	e.sig.Store(s)
	return s
}

// All decodes every signature, in table order (for tests and the table's generator; a run
// decodes only those its log's lines match).
func (t *Table) All() []*Signature {
	out := make([]*Signature, len(t.entries))
	for i := range t.entries {
		out[i] = t.sig(int32(i))
	}
	return out
}

func (t *Table) prepare(s *Signature) error {
	if t.drivers[s.Driver] == nil {
		return fmt.Errorf("driver %q is not in any file's drivers", s.Driver)
	}
	s.drv = t.drivers[s.Driver]
	if s.Source == "" || s.Kernels == "" || s.What == "" {
		return fmt.Errorf("source, kernels and what are required")
	}
	if !slices.Contains(layers, s.Layer) {
		return fmt.Errorf("layer %q is not one of %v", s.Layer, layers)
	}
	if s.Action != "" && (!s.Action.Valid() || s.Action == report.ActionNone) {
		return fmt.Errorf("action %q is not a problem's action of report.Actions", s.Action)
	}
	sev, ok := severities[s.Severity]
	if !ok {
		return fmt.Errorf("severity %q is not one of critical, warning, info, benign", s.Severity)
	}
	s.Sev, s.Benign = sev, s.Severity == "benign"
	if !slices.Contains(levels, s.Level) {
		return fmt.Errorf("level %q is not one of %v", s.Level, levels)
	}
	if !slices.Contains(kinds, s.Kind) {
		return fmt.Errorf("kind %q is not one of %v", s.Kind, kinds[1:])
	}
	if s.Kind == "" {
		s.Kind = KindFault
	}
	if s.Outcome != "" && s.Outcome != "recovered" && s.Outcome != "failed" {
		return fmt.Errorf("outcome %q is not recovered or failed", s.Outcome)
	}
	if s.Kind == KindLink && s.Args.State == 0 && s.State == "" {
		return fmt.Errorf("a link signature needs args.state or state")
	}
	s.values = map[int][]string{}
	for k, vs := range s.Values {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || len(vs) == 0 {
			return fmt.Errorf("values key %q: a conversion index with at least one value", k)
		}
		s.values[n] = vs
	}
	s.roles = map[int]Role{}
	for _, r := range []struct {
		idx  int
		role Role
	}{{s.Args.Netdev, RoleNetdev}, {s.Args.IBDev, RoleIBDev}, {s.Args.PCI, RolePCI}, {s.Args.Module, RoleModule}, {s.Args.State, RoleState}} {
		if r.idx != 0 {
			s.roles[r.idx] = r.role
		}
	}
	for _, text := range append([]string{s.Format}, s.Alt...) {
		f, err := ParseFormat(text)
		if err != nil {
			return err
		}
		n := f.Conversions()
		for _, idx := range append([]int{s.Args.Netdev, s.Args.IBDev, s.Args.PCI, s.Args.Port, s.Args.State, s.Args.Module}, s.Args.Detail...) {
			if idx < 0 || idx > n {
				return fmt.Errorf("format %q has %d conversions; args names %d", text, n, idx)
			}
		}
		for idx := range s.values {
			if idx > n {
				return fmt.Errorf("format %q has %d conversions; values names %d", text, n, idx)
			}
		}
		lit := f.Literal(s.values)
		if lit < MinLiteral && len(t.drivers[s.Driver].Prefixes) == 0 {
			return fmt.Errorf("format %q has %d literal characters, fewer than %d, and its driver no prefix to scope it", text, lit, MinLiteral)
		}
		s.scoped = s.scoped || lit < MinLiteral
		s.lits = append(s.lits, lit)
		// Compiled at its first use: the table test compiles every expression. Its longest
		// literal word is the prefilter, so loading parses no expression.
		expr := f.Expr(s.values, s.roles, s.Continued)
		re := relit.New(expr)
		if w := f.Word(); w != "" {
			re = relit.NewLiteral(expr, w)
		}
		for _, m := range detailRef.FindAllStringSubmatch(s.DetailText, -1) {
			if i, _ := strconv.Atoi(m[1]); i < 1 || i > n {
				return fmt.Errorf("format %q has %d conversions; detail names {%s}", text, n, m[1])
			}
		}
		// An alternate wording must keep the conversions args name in the same places, or
		// "detail" and the roles would read other fields on its lines.
		if len(s.formats) > 0 {
			for _, idx := range append([]int{s.Args.Netdev, s.Args.IBDev, s.Args.PCI, s.Args.Port, s.Args.State, s.Args.Module}, s.Args.Detail...) {
				if idx > 0 && f.verbAt(idx) != s.formats[0].verbAt(idx) {
					return fmt.Errorf("format %q: conversion %d is %%%c, in %q it is %%%c", text, idx, f.verbAt(idx), s.formats[0].Text, s.formats[0].verbAt(idx))
				}
			}
		}
		s.formats = append(s.formats, f)
		s.res = append(s.res, re)
	}
	return nil
}

// quietLevel says the driver prints the signature's line below KERN_WARNING, or the table calls
// it benign.
func quietLevel(s *Signature) bool {
	return s.Benign || slices.Index(levels, s.Level) > slices.Index(levels, "warn")
}

// Signature returns the entry with that id, nil if none. It decodes the table until it finds
// it: tests ask it, runs do not.
func (t *Table) Signature(id string) *Signature {
	for i := range t.entries {
		if s := t.sig(int32(i)); s.ID == id {
			return s
		}
	}
	return nil
}

// Driver returns the driver of that name, nil if none.
func (t *Table) Driver(name string) *Driver { return t.drivers[name] }

// DriverOf returns the driver whose prefix starts text, nil if none. A SCSI host's lead
// (shost_printk, include/scsi/scsi_host.h: "scsi host7: ib_srp: ...") comes before the
// driver's own prefix and is passed over.
func (t *Table) DriverOf(text string) *Driver {
	if rest, ok := strings.CutPrefix(text, "scsi host"); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			text = after
		}
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(text, p.text) {
			return p.driver
		}
	}
	return nil
}
