package sigscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Kernel is one scanned release.
type Kernel struct {
	Release string // 6.12.19
	Tree    *Tree
}

// Dropped is a missing format the generator wrote no entry for, with why.
type Dropped struct {
	Driver, Format, Why string
}

// Generated is what Generate makes: the drivers the family's file defines, the entries and
// the formats it left out.
type Generated struct {
	Family     string
	Releases   []string // the trees read, as sigscan.Trees names them
	Drivers    []kevent.Driver
	Signatures []*kevent.Signature
	Dropped    []Dropped
}

// entry is one missing format, over every release that prints it.
type entry struct {
	driver *SourceDriver
	format string
	level  string
	values map[int][]string // conversions printing __func__: the functions
	cited
	first DriverPrint // the newest release's first print, for the rules
}

// Generate writes an entry for every format the kernels print, in the drivers of family, that
// the table (signature files of sigs other than skip) does not recognise. An entry that would
// take another's line, or that does not recognise its own, is left out, as is a format too
// short for a driver without a prefix to scope it.
func Generate(sigs fs.FS, skip, family string, kernels []Kernel, foreign []*Tree) (*Generated, error) {
	g := &Generated{Family: family}
	if _, ok := genWhat[family]; !ok {
		return nil, fmt.Errorf("family %q: none of %v", family, slices.Sorted(maps.Keys(genWhat)))
	}
	for _, k := range kernels {
		g.Releases = append(g.Releases, k.Release)
	}
	if _, err := readAt(g.Releases); err != nil {
		return nil, err
	}
	base, err := tableFS(sigs, skip, nil)
	if err != nil {
		return nil, err
	}
	tb, err := kevent.Load(base)
	if err != nil {
		return nil, err
	}
	// The family's drivers that no other file defines are defined by the generated one.
	for _, d := range SourceDrivers {
		if d.Family == family && d.Define != nil && tb.Driver(d.Name) == nil {
			g.Drivers = append(g.Drivers, *d.Define)
		}
	}
	if len(g.Drivers) > 0 {
		b, err := g.JSON()
		if err != nil {
			return nil, err
		}
		if base, err = tableFS(sigs, skip, b); err != nil {
			return nil, err
		}
		if tb, err = kevent.Load(base); err != nil {
			return nil, err
		}
	}
	entries := map[string]*entry{} // driver \x00 format
	var order []string
	var limited ratelimits
	for _, k := range kernels {
		var prints []DriverPrint
		for _, p := range k.Tree.Prints() {
			if p.Driver.Family == family {
				prints = append(prints, p)
			}
		}
		for _, r := range Check(tb, prints) {
			if r.Ratelimited && r.Func != "" && r.Skip == "" {
				limited.add(&r, k.Release)
			}
			if !r.Missing() && !heldByAnother(&r) {
				continue
			}
			msg, values := r.Entry()
			key := r.Driver.Name + "\x00" + msg
			e := entries[key]
			if e == nil {
				e = &entry{driver: r.Driver, format: msg, level: r.Level, values: map[int][]string{}}
				entries[key] = e
				order = append(order, key)
			}
			for i, v := range values {
				for _, fn := range v {
					if !slices.Contains(e.values[i], fn) {
						e.values[i] = append(e.values[i], fn)
					}
				}
			}
			e.cite(&r.Print, k.Release)
			e.first = r.DriverPrint // the last kernel given is the newest
			// The gravest level any release prints it at; "" (from a variable) yields.
			if r.Level != "" && (e.level == "" || levelNum[r.Level] < levelNum[e.level]) {
				e.level = r.Level
			}
		}
	}
	layerOf := map[string]string{}
	for _, row := range engine.DefaultFaults().Rows {
		layerOf[row.ID] = row.Layer
	}
	ids := map[string]bool{}
	for _, s := range tb.All() {
		ids[s.ID] = true
	}
	byFormat := map[string]string{} // format -> driver of the entry written for it
	sortEntries(order, entries, kernels)
	for _, key := range order {
		e := entries[key]
		drv := tb.Driver(e.driver.Name)
		if drv == nil {
			return nil, fmt.Errorf("driver %s is in no signature file", e.driver.Name)
		}
		f, err := kevent.ParseFormat(e.format)
		if err != nil {
			g.Dropped = append(g.Dropped, Dropped{e.driver.Name, e.format, "format does not parse"})
			continue
		}
		if f.Literal(e.values) < kevent.MinLiteral && len(drv.Prefixes) == 0 {
			g.Dropped = append(g.Dropped, Dropped{e.driver.Name, e.format, "too short to match without the driver's prefix, which it has none of"})
			continue
		}
		if d, ok := byFormat[e.format]; ok {
			g.Dropped = append(g.Dropped, Dropped{e.driver.Name, e.format, "printed alike by " + d + ", whose entry is kept"})
			continue
		}
		rule := Classify(e.driver.Name, e.first.File, e.first.Func, e.format)
		if rule == nil || layerOf[rule.Fault] == "" {
			return nil, fmt.Errorf("%s %q: no rule gives a known fault row", e.driver.Name, e.format)
		}
		sev := severityOf(e.level, literalText(e.format))
		if rule.Severity != "" {
			sev = rule.Severity
		}
		if !severe[e.level] {
			sev = "info" // a print below warning is information, whatever its row
		}
		if sev == "warning" && refusal.MatchString(e.format) && !failure.MatchString(e.format) {
			// Whatever the row, a setting or feature refused without a failure is information
			// ("LSO not supported, please upgrade to later FW version to enable LSO").
			sev = "info"
		}
		text := Texts[rule.Fault]
		switch {
		case rule.What != "":
			text = struct{ What, Fix string }{rule.What, rule.Fix}
		case !severe[e.level]:
			// The driver's own words say what happened; the level says it is information.
			text = struct{ What, Fix string }{fmt.Sprintf("%s (%s, below warning): %s", e.driver.Name, e.level, gist(e.format)), ""}
		case sev != "info":
		case rule.Fault == "user-verbs":
			text = refusalWhat
		case refusal.MatchString(e.format) || rule.Severity == "info":
			text = unsupportedWhat
		default:
			text = noticeWhat
		}
		level := e.level
		if level == "" {
			level = "err" // a level from a variable: the graver of what it takes
		}
		s := &kevent.Signature{
			ID:       newID(e.driver.ID, idText(&e.first.Print), ids),
			Driver:   e.driver.Name,
			Format:   e.format,
			Source:   sourceText(e.sources),
			Kernels:  strings.Join(e.releases, ","),
			Level:    level,
			Layer:    layerOf[rule.Fault],
			Fault:    rule.Fault,
			Severity: sev,
			What:     text.What,
			Fix:      text.Fix,
			Family:   eventFamily(e.driver.Name, e.first.File, e.format, rule.Fault),
		}
		if len(e.values) > 0 {
			s.Values = map[string][]string{}
			for i, v := range e.values {
				sort.Strings(v)
				s.Values[fmt.Sprint(i)] = v
			}
		}
		byFormat[e.format] = e.driver.Name
		g.Signatures = append(g.Signatures, s)
	}
	g.Signatures = append(g.Signatures, limited.signatures(tb, layerOf, ids)...)
	var alien []DriverPrint
	for _, t := range foreign {
		alien = append(alien, t.ForeignPrints(family)...)
	}
	if err := g.settle(sigs, skip, alien); err != nil {
		return nil, err
	}
	return g, nil
}

// heldByAnother reports a print recognised only by another driver's generated entry (hns_roce's
// "HW2SW_MPT failed (%d)" on mlx4's "HW2SW_MPT failed (%d)."): the print gets an entry of its
// own, which wins on its driver's lines by its longer text, so that what a family's file holds
// does not depend on which family was generated last.
func heldByAnother(r *Result) bool {
	return r.Skip == "" && r.By != nil && strings.HasSuffix(r.By.File, "-scan.json") && r.By.Driver != r.Driver.Name
}

// sortEntries orders entries by driver, then by where the newest release prints them.
func sortEntries(order []string, entries map[string]*entry, kernels []Kernel) {
	rank := map[string]int{}
	for i, d := range SourceDrivers {
		rank[d.Name] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := entries[order[i]], entries[order[j]]
		if rank[a.driver.Name] != rank[b.driver.Name] {
			return rank[a.driver.Name] < rank[b.driver.Name]
		}
		if a.first.File != b.first.File {
			return a.first.File < b.first.File
		}
		return a.first.Line < b.first.Line
	})
}

// gist is a format as a reader takes it in: each conversion an ellipsis ("Failed to query
// config: …").
func gist(format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		b.WriteString("…")
		i = convEnd(format, i) - 1
	}
	return b.String()
}

// cited is where a generated entry's prints are: the releases, in the order given, and each
// "file function()" with the releases that print there.
type cited struct {
	releases []string
	sources  map[string][]string
}

func (c *cited) cite(p *Print, release string) {
	if !slices.Contains(c.releases, release) {
		c.releases = append(c.releases, release)
	}
	if c.sources == nil {
		c.sources = map[string][]string{}
	}
	src := p.File + " " + p.Func + "()"
	if !slices.Contains(c.sources[src], release) {
		c.sources[src] = append(c.sources[src], release)
	}
}

// sourceText names each file and function with the releases that print the format there.
func sourceText(srcs map[string][]string) string {
	keys := make([]string, 0, len(srcs))
	for k := range srcs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " (" + strings.Join(srcs[k], ", ") + ")"
	}
	return strings.Join(parts, "; ")
}

var (
	idWord    = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)
	stopWords = map[string]bool{"a": true, "an": true, "the": true, "to": true, "of": true, "for": true, "on": true, "in": true, "with": true, "and": true, "or": true, "is": true, "err": true, "ret": true, "rc": true, "s": true, "d": true, "x": true, "u": true, "lu": true, "llx": true, "lld": true, "llu": true, "ld": true, "at": true, "by": true, "from": true, "be": true, "it": true}
)

// idText is the text an id is made of: the call's own words, the function's name when it
// has too few ("fail %d" in pages_work_handler()).
func idText(p *Print) string {
	own := p.Format
	if i := strings.IndexByte(own, '\n'); i >= 0 {
		own = own[:i]
	}
	if !strings.Contains(p.Prefix, "%") {
		own = p.Prefix + own
	}
	n := 0
	for _, w := range idWord.FindAllString(literalText(own), -1) {
		if !stopWords[strings.ToLower(w)] {
			n++
		}
	}
	if n < 2 && p.Func != "" {
		own = strings.ReplaceAll(p.Func, "_", " ") + " " + own
	}
	return own
}

// newID makes an id from the format's words, unique among ids.
func newID(prefix, format string, ids map[string]bool) string {
	var words []string
	for _, w := range idWord.FindAllString(literalText(format), -1) {
		w = strings.ToLower(w)
		if stopWords[w] {
			continue
		}
		words = append(words, w)
		if len(words) == 7 {
			break
		}
	}
	id := prefix + "-" + strings.Join(words, "-")
	for n := 2; ids[id]; n++ {
		id = fmt.Sprintf("%s-%s-%d", prefix, strings.Join(words, "-"), n)
	}
	ids[id] = true
	return id
}

// LoadWithout loads the table of the signature files of sigs but skip.
func LoadWithout(sigs fs.FS, skip string) (*kevent.Table, error) {
	tfs, err := tableFS(sigs, skip, nil)
	if err != nil {
		return nil, err
	}
	return kevent.Load(tfs)
}

// tableFS is the signature files of sigs, skip left out and, when extra is set, it in its
// place.
func tableFS(sigs fs.FS, skip string, extra []byte) (fs.FS, error) {
	names, err := fs.Glob(sigs, "*.json")
	if err != nil {
		return nil, err
	}
	m := fstest.MapFS{}
	for _, n := range names {
		if n == skip {
			continue
		}
		b, err := fs.ReadFile(sigs, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		m["signatures/"+n] = &fstest.MapFile{Data: b}
	}
	if extra != nil {
		m["signatures/"+skip] = &fstest.MapFile{Data: extra}
	}
	return m, nil
}

// settle drops entries until the table with them passes its own test: every entry recognises
// the lines formatted from its formats after its driver's prefixes, and no other entry takes
// them (internal/kevent TestTableFormatsMatchThemselves); and until no entry recognises a line
// of the foreign prints (other drivers' words alike: "add rule failed").
func (g *Generated) settle(sigs fs.FS, skip string, foreign []DriverPrint) error {
	for round := 0; round < 50; round++ {
		b, err := g.JSON()
		if err != nil {
			return err
		}
		tfs, err := tableFS(sigs, skip, b)
		if err != nil {
			return err
		}
		tb, err := kevent.Load(tfs)
		if err != nil {
			return fmt.Errorf("the generated table does not load: %w", err)
		}
		isNew := map[string]bool{}
		for _, s := range g.Signatures {
			isNew[s.ID] = true
		}
		drop := map[string]string{}
		for _, s := range tb.All() {
			for _, line := range selfLines(tb, s) {
				got := Recognise(tb, line, "err")
				if got == s {
					continue
				}
				switch {
				case isNew[s.ID]:
					why := "recognises not its own line"
					if got != nil {
						why = "its line is taken by " + got.ID
					}
					drop[s.ID] = why
				case got != nil && isNew[got.ID]:
					drop[got.ID] = "takes the line of " + s.ID
				}
			}
		}
		for _, r := range Check(tb, foreign) {
			if r.By != nil && isNew[r.By.ID] && drop[r.By.ID] == "" {
				drop[r.By.ID] = fmt.Sprintf("recognises %s %s() %q", r.File, r.Func, r.Message())
			}
		}
		if len(drop) == 0 {
			return nil
		}
		kept := g.Signatures[:0]
		for _, s := range g.Signatures {
			if why, ok := drop[s.ID]; ok {
				g.Dropped = append(g.Dropped, Dropped{s.Driver, s.Format, why})
				continue
			}
			kept = append(kept, s)
		}
		g.Signatures = kept
	}
	return fmt.Errorf("the generated entries do not settle")
}

// selfLines are the lines the table's test classifies for s: each format's sample after each
// of its driver's prefixes and the device the prefix names.
func selfLines(tb *kevent.Table, s *kevent.Signature) []string {
	d := tb.Driver(s.Driver)
	prefixes := d.Prefixes
	if len(prefixes) == 0 {
		prefixes = []string{d.Example}
	}
	var out []string
	for _, f := range s.Formats() {
		for _, p := range prefixes {
			switch d.Device {
			case "pci":
				p += "0000:3b:00.0: "
			case "net":
				p += "0000:3b:00.0 ens1f0np0: "
			case "ib":
				p += "mlx5_0: "
			}
			out = append(out, p+f.Sample(s.ValueSets(), s.Roles()))
		}
	}
	return out
}

// Trees cites the source trees a release name stands for in -kernels: a generated file's
// comment names each tree it was read from, and a release without a citation is refused.
var Trees = map[string]string{
	"4.19.304":        "maxiangpan/linux-4.19 c46e277ca, its kernel/ directory",
	"5.4.214":         "GunWooJung/git-linux-5.4.214 35604827",
	"5.15.178":        "wangshuai199398/linux-5-15 76278aab8",
	"6.12.19":         "wishday/linux-6.12.y 21ae40e85",
	"MLNX_OFED-4.9":   "mlnx-ofa_kernel 4.9 as mirrored in wjz304/mlnx-ofed-kernel 8ba4057",
	"MLNX_OFED-5.8":   "mlnx-ofa_kernel 5.8 as mirrored in wjz304/mlnx-ofed-kernel 56bfb0f",
	"MLNX_OFED-24.07": "mlnx-ofa_kernel 24.07-0.6.0.1 as mirrored in wjz304/mlnx-ofed-kernel 2c0186b",
}

// readAt names the trees read, in the order given.
func readAt(releases []string) (string, error) {
	var parts []string
	for _, r := range releases {
		c, ok := Trees[r]
		if !ok {
			return "", fmt.Errorf("release %q: no citation in sigscan.Trees (%v)", r, slices.Sorted(maps.Keys(Trees)))
		}
		parts = append(parts, r+" ("+c+")")
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no release given")
	}
	return "Read at " + strings.Join(parts, ", ") + ".", nil
}

// genWhat says, by family, what a generated file holds: the comment's head and what it
// was generated from are joined around the trees read.
var genWhat = map[string][2]string{
	"mlx":       {mlxHead, mlxTail},
	"vendors":   familyComment("the other vendors' RDMA drivers (bnxt_re, irdma, i40iw, efa, hns_roce, qedr, iw_cxgb4, erdma, mana_ib, vmw_pvrdma, ocrdma, usnic, siw, hfi1) and, of their Ethernet (PF) drivers (bnxt_en, ice, i40e, hns3, qed, qede, cxgb4, mana), the messages about the RDMA function and the device's health (sigscan's ethScope: firmware, reset, recovery, command queues, the PCIe function, the RDMA auxiliary device, the link)", "vendors.json"),
	"consumers": familyComment("the RDMA consumers (iSER, iSER target, SRP, SRP target, RTRS, NVMe over RDMA host and target, NFS over RDMA, RDS over InfiniBand, SMC-R, SMB Direct in ksmbd and in the SMB client)", "consumers.json"),
	"pcie":      familyComment("the PCIe path (drivers/pci/pcie aer.c, err.c, dpc.c, edr.c, portdrv*.c, bw_notification.c; pciehp; pci.c's link, bandwidth, reset and readiness messages; GHES and CPER's PCIe parts), the IOMMUs (Intel VT-d, DMAR-IR, AMD-Vi, ARM SMMU and SMMUv3, dma-iommu, swiotlb) and the DMA API's debugging checks (kernel/dma/debug.c)", "pcie.json"),
}

// familyComment is the head and tail of a generated file other than mlx-scan.json.
func familyComment(what, hand string) [2]string {
	return [2]string{"Generated by internal/kevent/sigscan (docs/kernel-log.md, Coverage) from the print calls at warning level or graver of " + what + " that the hand-written entries (" + hand + ", with the other files) do not recognise.",
		"Each format is the call's own string (C concatenation joined, the trailing newline dropped, pr_fmt's and dev_fmt's literal text before it kept: 'AER: ', 'DPC: ', 'pciehp: ', 'DMAR: ', bnxt_re's 'QPLIB: '); 'source' names file and function with the releases that print it there, 'kernels' the releases. Layer and fault row come from the rules of sigscan/rules.go (the PCIe path's lines pcie-interface, with the family of the port service that prints them where pcie.aer judges it: aer, aer-recovery, dpc, hotplug, cper-pcie; the IOMMUs' and DMA mapping's dma-engine), " + severityRule + " Drivers that no hand-written file defines are defined here, with the source of their prefix. Do not edit: regenerate."}
}

// severityRule is how a generated entry's severity, what and fix are chosen, as every
// generated file's comment says.
const severityRule = "severity from the print's level (crit and graver critical, err and warn warning; a refused request or unsupported setting, and a warning-level notice of a state or a choice without a word of failure, info; an info or notice print that names a failure, a link or module change or a reset is an entry of its own, info; the ratelimit's '<function>: N callbacks suppressed' has one entry per driver and fault row holding the functions of its ratelimited prints, info), 'what' and 'fix' are stated once per fault row there."

// mlxHead and mlxTail frame the trees read in mlx-scan.json's comment.
const (
	mlxHead = "Generated by internal/kevent/sigscan (docs/kernel-log.md, Coverage) from the drivers' own print calls at warning level or graver that the hand-written entries (mlx.json) do not recognise."
	mlxTail = "Each format is the call's own string (C concatenation joined, the trailing newline dropped, a macro's literal text before it kept: esw_warn's 'E-Switch: ', rxe's pr_fmt 'rdma_rxe: '; a prefix with conversions, mlx5_core_err's 'func:line:(pid N): ', is left to the unanchored start); 'source' names file and function with the releases that print it there, 'kernels' the releases. Layer and fault row come from the rules of sigscan/rules.go, " + severityRule + " Do not edit: regenerate."
)

// JSON is the generated signature file.
func (g *Generated) JSON() ([]byte, error) {
	at, err := readAt(g.Releases)
	if err != nil {
		return nil, err
	}
	what := genWhat[g.Family]
	v := struct {
		Comment    string              `json:"_comment"`
		Drivers    []kevent.Driver     `json:"drivers"`
		Signatures []*kevent.Signature `json:"signatures"`
	}{what[0] + " " + at + " " + what[1], g.Drivers, g.Signatures}
	if v.Drivers == nil {
		v.Drivers = []kevent.Driver{}
	}
	if v.Signatures == nil {
		// The drivers alone, loaded before any entry exists: the table reads an array.
		v.Signatures = []*kevent.Signature{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ratelimits are a family's prints that go through the kernel's ratelimit, by driver and fault
// row: when the ratelimit drops lines it prints "<function>: N callbacks suppressed"
// (lib/ratelimit.c ___ratelimit(), KERN_WARNING), which names only the calling function. An
// entry per driver and row holds the functions, so that a storm of, say, failed firmware
// commands ("mlx5_cmd_out_err: 110 callbacks suppressed") is read as more of the same.
type ratelimits struct {
	order  []string
	groups map[string]*ratelimitGroup
	owner  map[string]string // function -> group: a function is in one group only
}

type ratelimitGroup struct {
	driver *SourceDriver
	fault  string
	funcs  []string
	cited
}

func (l *ratelimits) add(r *Result, release string) {
	rule := Classify(r.Driver.Name, r.File, r.Func, r.Message())
	if rule == nil {
		return
	}
	key := r.Driver.Name + "\x00" + rule.Fault
	if l.groups == nil {
		l.groups, l.owner = map[string]*ratelimitGroup{}, map[string]string{}
	}
	fnKey := r.Driver.Name + "\x00" + r.Func
	if k, ok := l.owner[fnKey]; ok && k != key {
		return
	}
	l.owner[fnKey] = key
	g := l.groups[key]
	if g == nil {
		g = &ratelimitGroup{driver: r.Driver, fault: rule.Fault}
		l.groups[key] = g
		l.order = append(l.order, key)
	}
	if !slices.Contains(g.funcs, r.Func) {
		g.funcs = append(g.funcs, r.Func)
	}
	g.cite(&r.Print, release)
}

// signatures are the groups' entries, information of kind dump (the line adds a count to the
// event before it, not an event of its own); a function whose line the table already knows
// (signatures/pcie.json's IOMMU fault printers) is left to it.
func (l *ratelimits) signatures(tb *kevent.Table, layerOf map[string]string, ids map[string]bool) []*kevent.Signature {
	var out []*kevent.Signature
	for _, key := range l.order {
		g := l.groups[key]
		var funcs []string
		for _, fn := range g.funcs {
			if Recognise(tb, fn+": 17 callbacks suppressed", "warn") == nil {
				funcs = append(funcs, fn)
			}
		}
		if len(funcs) == 0 {
			continue
		}
		sort.Strings(funcs)
		text := Texts[g.fault]
		out = append(out, &kevent.Signature{
			ID:       newID(g.driver.ID, "ratelimited "+g.fault, ids),
			Driver:   g.driver.Name,
			Format:   "%s: %d callbacks suppressed",
			Source:   "lib/ratelimit.c ___ratelimit(), naming the function of these ratelimited prints: " + sourceText(g.sources),
			Kernels:  strings.Join(g.releases, ","),
			Level:    "warn",
			Layer:    layerOf[g.fault],
			Fault:    g.fault,
			Severity: "info",
			Kind:     kevent.KindDump,
			What:     "the kernel's ratelimit dropped more of these lines (the count says how many): " + strings.ToLower(text.What[:1]) + text.What[1:],
			Fix:      text.Fix,
			Args:     kevent.Args{Detail: []int{1}},
			Values:   map[string][]string{"1": funcs},
		})
	}
	return out
}
