package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Redaction replaces identifying values with stand-ins, consistently: the same GUID, MAC, IP
// address, hostname or serial number maps to the same stand-in everywhere in the snapshot and in
// every form it is written in, so that links between files (a node GUID in sysfs and in netlink,
// a RoCE GID derived from a MAC) survive. Stand-ins keep the form a parser reads: a GUID stays a
// GUID written the same way (colon groups, 0x and 16 digits, bytes), a MAC a MAC, a binary value
// its length.
//
// Identifiers are replaced as tokens, never as parts of words: a match needs a character that
// cannot belong to an identifier (or the start or end) on both sides, so that a host called "vm"
// leaves vmw_pvrdma, kvm-clock and nested_pvm=1 alone. The hostname, which can be any short word,
// is replaced only where a hostname is written: the hostname files, node descriptions, the
// kernel command line and /etc/hosts, the kernel log, facts.json and meta.json.
type redactor struct {
	maps map[string]map[string]string
	// guids and macs map an identifier's value, whatever form it was seen in, to its stand-in's.
	guids map[uint64]uint64
	macs  map[uint64]uint64
	// hosts are the hostnames seen (longest first) and their stand-ins; serials the board and
	// module serial numbers.
	hosts   []string
	hostRE  *regexp.Regexp
	serials map[string]string
	serRE   *regexp.Regexp
}

func newRedactor() *redactor {
	return &redactor{maps: map[string]map[string]string{}, guids: map[uint64]uint64{}, macs: map[uint64]uint64{},
		serials: map[string]string{}}
}

// The patterns are compiled at the first redaction: only `record --redact` uses them, and
// compiling them when the program started was part of every command's start-up.
var (
	// GUIDs (four groups of four hex digits: node_guid, sys_image_guid) and GIDs (eight groups)
	// as sysfs prints them, and address bytes separated by colons or dashes (MACs, GUIDs as eight
	// bytes, IPoIB hardware addresses): one pattern, so that each run is classified whole.
	reHexGroups = lazyRegexp(`[0-9A-Fa-f]{4}(?::[0-9A-Fa-f]{4})+|[0-9A-Fa-f]{2}(?:(?::[0-9A-Fa-f]{2})+|(?:-[0-9A-Fa-f]{2})+)`)
	// Runs of hex digits that may be a GUID (0x and 16 digits, or 16 digits) or a MAC (12).
	reHexRun = lazyRegexp(`(?:0[xX])?[0-9A-Fa-f]{12,16}`)
	reIP4    = lazyRegexp(`(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isWord: a character that continues a name (hostname labels, serial numbers, module names).
func isWord(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// token says s[i:j] stands alone: the characters around it cannot continue it. A dot continues
// a name when a name character follows it (sysctl.vm.swappiness, vmw_pvrdma.driver), not when it
// ends a sentence; a colon continues a run of hex groups when a hex digit is on its other side.
func token(s string, i, j int, colons bool) bool {
	if i > 0 {
		c := s[i-1]
		if isWord(c) || c == '.' && i > 1 && isWord(s[i-2]) || colons && c == ':' && i > 1 && isHex(s[i-2]) {
			return false
		}
	}
	if j < len(s) {
		c := s[j]
		if isWord(c) || c == '.' && j+1 < len(s) && isWord(s[j+1]) || colons && c == ':' && j+1 < len(s) && isHex(s[j+1]) {
			return false
		}
	}
	return true
}

func (r *redactor) stand(kind, v string, mk func(n int) string) string {
	m := r.maps[kind]
	if m == nil {
		m = map[string]string{}
		r.maps[kind] = m
	}
	if s, ok := m[v]; ok {
		return s
	}
	s := mk(len(m) + 1)
	m[v] = s
	return s
}

// guidValue returns the stand-in of a GUID value. 0 and all ones identify nothing.
func (r *redactor) guidValue(v uint64) uint64 {
	if v == 0 || v == ^uint64(0) {
		return v
	}
	if s, ok := r.guids[v]; ok {
		return s
	}
	s := uint64(len(r.guids) + 1)
	r.guids[v] = s
	return s
}

// macValue returns the stand-in of a 48-bit MAC: a locally administered 02:00:00:xx:xx:xx.
func (r *redactor) macValue(v uint64) uint64 {
	if v == 0 || v == 0xffffffffffff {
		return v
	}
	if s, ok := r.macs[v]; ok {
		return s
	}
	s := 0x020000000000 | uint64(len(r.macs)+1)&0xffffff
	r.macs[v] = s
	return s
}

// caseOf writes s in upper case when orig was written in upper-case hex.
func caseOf(orig, s string) string {
	if strings.ContainsAny(orig, "ABCDEF") && !strings.ContainsAny(orig, "abcdef") {
		return strings.ToUpper(s)
	}
	return s
}

func hexGroups(v uint64, groups int) string {
	var b strings.Builder
	for i := groups - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "%04x", v>>(16*i)&0xffff)
		if i > 0 {
			b.WriteByte(':')
		}
	}
	return b.String()
}

func hexBytes(v uint64, n int, sep byte) string {
	var b strings.Builder
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "%02x", v>>(8*i)&0xff)
		if i > 0 {
			b.WriteByte(sep)
		}
	}
	return b.String()
}

func (r *redactor) ip4(v string) string {
	// Loopback, unspecified, broadcast and masks identify nothing.
	if strings.HasPrefix(v, "127.") || strings.HasPrefix(v, "255.") || v == "0.0.0.0" {
		return v
	}
	return r.stand("ip4", v, func(n int) string {
		// The documentation ranges of RFC 5737, then the benchmarking range of RFC 2544 (a /15),
		// so that no two addresses share a stand-in.
		switch {
		case n <= 254:
			return fmt.Sprintf("192.0.2.%d", n)
		case n <= 508:
			return fmt.Sprintf("198.51.100.%d", n-254)
		case n <= 762:
			return fmt.Sprintf("203.0.113.%d", n-508)
		}
		n -= 762
		return fmt.Sprintf("198.%d.%d.%d", 18+n>>16&1, n>>8&0xff, n&0xff)
	})
}

// gidPrefix redacts the upper 64 bits of a GID (and the subnet prefix nldev reports): the
// link-local prefix and multicast prefixes identify nothing and say what kind of GID it is.
func (r *redactor) gidPrefix(p uint64) uint64 {
	if p>>48 == 0xfe80 || p>>56 == 0xff || p == 0 {
		return p
	}
	s := r.stand("gidprefix", strconv.FormatUint(p, 16), func(n int) string {
		return strconv.FormatUint(0x20010db800000000|uint64(n)&0xffff, 16)
	})
	v, _ := strconv.ParseUint(s, 16, 64)
	return v
}

// gid128 keeps the kind of GID (link-local, IPv4-mapped, global, multicast) and replaces what
// identifies: an interface id derived from a MAC (EUI-64) becomes the EUI-64 of the MAC's
// stand-in, any other the stand-in of the GUID it is.
func (r *redactor) gid128(hi, lo uint64) (uint64, uint64) {
	switch {
	case hi == 0 && lo == 0, hi>>56 == 0xff:
		return hi, lo
	case hi == 0 && lo>>32 == 0xffff:
		ip := r.ip4(fmt.Sprintf("%d.%d.%d.%d", lo>>24&0xff, lo>>16&0xff, lo>>8&0xff, lo&0xff))
		var o [4]uint64
		fmt.Sscanf(ip, "%d.%d.%d.%d", &o[0], &o[1], &o[2], &o[3])
		return 0, 0xffff<<32 | o[0]<<24 | o[1]<<16 | o[2]<<8 | o[3]
	}
	hi = r.gidPrefix(hi)
	if lo>>24&0xffff == 0xfffe {
		mac := (lo>>40 ^ 0x020000) << 24 & 0xffffff000000
		mac |= lo & 0xffffff
		s := r.macValue(mac)
		return hi, (s>>24^0x020000)<<40 | 0xfffe<<24 | s&0xffffff
	}
	return hi, r.guidValue(lo)
}

// hexRun classifies a run of hex groups or bytes and returns its stand-in written the same way,
// or the run unchanged when it is none of the identifiers.
func (r *redactor) hexRun(v string) string {
	var out string
	if len(v) > 4 && v[4] == ':' {
		g := strings.Split(v, ":")
		val := func(gs []string) uint64 {
			x, _ := strconv.ParseUint(strings.Join(gs, ""), 16, 64)
			return x
		}
		switch len(g) {
		case 4:
			out = hexGroups(r.guidValue(val(g)), 4)
		case 8:
			hi, lo := r.gid128(val(g[:4]), val(g[4:]))
			out = hexGroups(hi, 4) + ":" + hexGroups(lo, 4)
		default:
			return v
		}
		return caseOf(v, out)
	}
	sep := v[2]
	bs := strings.Split(v, string(sep))
	val := func(bs []string) uint64 {
		x, _ := strconv.ParseUint(strings.Join(bs, ""), 16, 64)
		return x
	}
	switch {
	case len(bs) == 6:
		out = hexBytes(r.macValue(val(bs)), 6, sep)
	case len(bs) == 8:
		out = hexBytes(r.guidValue(val(bs)), 8, sep)
	case len(bs) == 20 && sep == ':':
		// An IPoIB hardware address: flags and QPN, then the port's GID.
		hi, lo := r.gid128(val(bs[4:12]), val(bs[12:]))
		out = strings.Join(bs[:4], ":") + ":" + hexBytes(hi, 8, ':') + ":" + hexBytes(lo, 8, ':')
	default:
		return v
	}
	return caseOf(v, out)
}

// known says a GUID or MAC value seen elsewhere in a structured place: only those are
// recognised in the forms without separators, which counters and addresses share.
func (r *redactor) hexWord(s string, i, j int) string {
	v := s[i:j]
	digits := strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X")
	x, err := strconv.ParseUint(digits, 16, 64)
	if err != nil {
		return v
	}
	switch len(digits) {
	case 16:
		// A GUID already known (a value below 2^32 is a counter or address more often than
		// not), or one a label on the same line calls a GUID.
		if _, ok := r.guids[x]; (!ok || x < 1<<32) && !guidLabel(s, i) {
			return v
		}
		return caseOf(v, v[:len(v)-16]+fmt.Sprintf("%016x", r.guidValue(x)))
	case 12:
		if _, ok := r.macs[x]; !ok || len(v) != 12 {
			return v
		}
		return caseOf(v, fmt.Sprintf("%012x", r.macValue(x)))
	}
	return v
}

// guidLabel: the text before i on its line names a GUID ("node_guid 0x...", "port GUID: ...").
func guidLabel(s string, i int) bool {
	from := max(i-24, 0)
	if k := strings.LastIndexByte(s[from:i], '\n'); k >= 0 {
		from += k + 1
	}
	return strings.Contains(strings.ToLower(s[from:i]), "guid")
}

// versionLabel: a word before i on its line names a version, which four dotted numbers often
// are (firmware 224.0.110.0), not an address.
func versionLabel(s string, i int) bool {
	from := max(i-32, 0)
	if k := strings.LastIndexByte(s[from:i], '\n'); k >= 0 {
		from += k + 1
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(s[from:i]), func(c rune) bool { return c > 0x7f || !isAlnum(byte(c)) }) {
		switch w {
		case "v", "ver", "version", "versions", "fw", "firmware", "rev", "revision", "release":
			return true
		}
	}
	return false
}

// replaceTokens replaces every match of re in s that stands alone (token) with f's answer.
func replaceTokens(s string, re *regexp.Regexp, colons bool, f func(s string, i, j int) string) string {
	idx := re.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		if !token(s, m[0], m[1], colons) {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(f(s, m[0], m[1]))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// textMode says which identifiers a text may hold and how it may change.
type textMode struct {
	hosts   bool // the hostname is written here (hostname files, node descriptions, the log)
	binary  bool // bytes whose length must not change: only same-length stand-ins
	version bool // a file that holds a version: dotted numbers are not addresses
	route   bool // /proc/net/route: addresses as little-endian hex words
}

func (r *redactor) text(s string, m textMode) string {
	same := func(f func(s string, i, j int) string) func(s string, i, j int) string {
		if !m.binary {
			return f
		}
		return func(s string, i, j int) string {
			if out := f(s, i, j); len(out) == j-i {
				return out
			}
			return s[i:j]
		}
	}
	s = replaceTokens(s, reHexGroups(), true, same(func(s string, i, j int) string { return r.hexRun(s[i:j]) }))
	s = replaceTokens(s, reHexRun(), false, same(r.hexWord))
	if !m.binary && !m.version {
		s = replaceTokens(s, reIP4(), false, func(s string, i, j int) string {
			if versionLabel(s, i) {
				return s[i:j]
			}
			return r.ip4(s[i:j])
		})
	}
	if r.serRE != nil {
		s = replaceTokens(s, r.serRE, false, same(func(s string, i, j int) string { return r.serials[s[i:j]] }))
	}
	if m.route && !m.binary {
		s = r.routes(s)
	}
	if m.hosts && !m.binary && r.hostRE != nil {
		s = replaceTokens(s, r.hostRE, false, func(s string, i, j int) string { return r.maps["host"][s[i:j]] })
	}
	return s
}

// routes redacts the Destination and Gateway columns of /proc/net/route, which the kernel
// writes as the address's bytes in host order ("%08X", net/ipv4/fib_trie.c fib_route_seq_show);
// the default route (00000000) and the masks stay.
func (r *redactor) routes(s string) string {
	lines := strings.Split(s, "\n")
	for n := 1; n < len(lines); n++ {
		f := strings.Split(lines[n], "\t")
		for _, c := range []int{1, 2} {
			if c >= len(f) || len(f[c]) != 8 || f[c] == "00000000" {
				continue
			}
			v, err := strconv.ParseUint(f[c], 16, 32)
			if err != nil {
				continue
			}
			var a [4]byte
			binary.NativeEndian.PutUint32(a[:], uint32(v))
			ip := r.ip4(fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]))
			if _, err := fmt.Sscanf(ip, "%d.%d.%d.%d", &a[0], &a[1], &a[2], &a[3]); err == nil {
				f[c] = fmt.Sprintf("%08X", binary.NativeEndian.Uint32(a[:]))
			}
		}
		lines[n] = strings.Join(f, "\t")
	}
	return strings.Join(lines, "\n")
}

// alternation compiles the strings as one expression, longest first so that a longer name is
// preferred where one is a prefix of another.
func alternation(words []string) *regexp.Regexp {
	if len(words) == 0 {
		return nil
	}
	ws := append([]string(nil), words...)
	sort.Slice(ws, func(i, j int) bool { return len(ws[i]) > len(ws[j]) || len(ws[i]) == len(ws[j]) && ws[i] < ws[j] })
	for i := range ws {
		ws[i] = regexp.QuoteMeta(ws[i])
	}
	return regexp.MustCompile(strings.Join(ws, "|"))
}

// addHost registers a hostname (and, for a dotted name, its first label, which node
// descriptions and logs print alone) with one stand-in.
func (r *redactor) addHost(h string) {
	h = strings.TrimSpace(h)
	if i := strings.IndexAny(h, " \t\n#"); i >= 0 {
		h = h[:i]
	}
	if h == "" || h == "(none)" || h == "localhost" || strings.HasPrefix(h, "localhost.") {
		return
	}
	stand := r.stand("host", h, func(n int) string { return fmt.Sprintf("host-%d", n) })
	if i := strings.IndexByte(h, '.'); i > 0 {
		if _, ok := r.maps["host"][h[:i]]; !ok {
			r.maps["host"][h[:i]] = stand
		}
	}
	r.hosts = r.hosts[:0]
	for k := range r.maps["host"] {
		r.hosts = append(r.hosts, k)
	}
	r.hostRE = alternation(r.hosts)
}

// addSerial registers a serial number and its stand-in; numbers too short to be told from a
// word are replaced only where they were found.
func (r *redactor) addSerial(orig, stand string) {
	if len(orig) < 4 || orig == stand {
		return
	}
	r.serials[orig] = stand
	var ws []string
	for k := range r.serials {
		ws = append(ws, k)
	}
	r.serRE = alternation(ws)
}

// serialStand is a stand-in of the serial's own length, so that binary replies keep theirs.
func (r *redactor) serialStand(serial string) string {
	s := r.stand("serial", serial, func(n int) string {
		sn := fmt.Sprintf("SN%0*d", max(len(serial)-2, 1), n)
		return sn[len(sn)-len(serial):]
	})
	r.addSerial(serial, s)
	return s
}

// hostFile says a file under root/ (a slash-separated path relative to it) holds a hostname.
func hostFile(rel string) bool {
	switch rel {
	case "proc/sys/kernel/hostname", "etc/hostname", "proc/cmdline", "etc/hosts":
		return true
	}
	return filepath.Base(rel) == "node_desc"
}

// versionFile says a file's value is a version (fw_ver, a module's version, osrelease).
func versionFile(rel string) bool {
	b := filepath.Base(rel)
	return strings.Contains(b, "ver") || b == "osrelease"
}

func isBinary(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) }

// Redact rewrites an unpacked snapshot directory in place.
func Redact(dir string) error {
	_, err := redactDir(dir)
	return err
}

type textFile struct {
	path string
	mode textMode
	json bool // rewrite string values only
}

func redactDir(dir string) (*redactor, error) {
	r := newRedactor()
	// Hostnames first: where the system says what it is called.
	if b, err := os.ReadFile(filepath.Join(dir, FactsFile)); err == nil {
		var f struct {
			Hostname string `json:"hostname"`
		}
		if json.Unmarshal(b, &f) == nil {
			r.addHost(f.Hostname)
		}
	}
	for _, p := range []string{"proc/sys/kernel/hostname", "etc/hostname"} {
		if b, err := readRegular(filepath.Join(dir, RootDir, p)); err == nil {
			r.addHost(string(b))
		}
	}
	// The binary replies whose structure says where identifiers are: devlink serial numbers,
	// module serial numbers, nldev GUIDs.
	if err := r.devlinkSerials(filepath.Join(dir, DevlinkDir)); err != nil {
		return nil, err
	}
	if err := r.moduleSerials(filepath.Join(dir, EthtoolNetlinkDir)); err != nil {
		return nil, err
	}
	if err := r.nldevGUIDs(filepath.Join(dir, NetlinkDir)); err != nil {
		return nil, err
	}

	// Text: every regular file under root/, the kernel log, facts, meta and ethtool statistics.
	// Files are visited in sorted order so that the stand-ins are the same each time the same
	// host is recorded.
	var files []textFile
	rootDir := filepath.Join(dir, RootDir)
	err := filepath.WalkDir(rootDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasSuffix(p, ".gz") && filepath.Base(p) != "config" {
			rel, _ := filepath.Rel(rootDir, p)
			rel = filepath.ToSlash(rel)
			files = append(files, textFile{path: p, mode: textMode{hosts: hostFile(rel), version: versionFile(rel), route: rel == "proc/net/route"}})
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	files = append(files,
		textFile{path: filepath.Join(dir, KmsgFile), mode: textMode{hosts: true}},
		textFile{path: filepath.Join(dir, FactsFile), mode: textMode{hosts: true}, json: true},
		textFile{path: filepath.Join(dir, MetaFile), mode: textMode{hosts: true}, json: true})
	if ents, err := os.ReadDir(filepath.Join(dir, EthtoolDir)); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, textFile{path: filepath.Join(dir, EthtoolDir, e.Name())})
			}
		}
	}
	contents := make([][]byte, len(files))
	for i, f := range files {
		if b, err := readRegular(f.path); err == nil {
			contents[i] = b
			if isBinary(b) {
				files[i].mode.binary, files[i].json = true, false
			}
		}
	}
	// Two passes: the first learns every identifier, so that the forms only known values are
	// recognised in (a GUID as 0x and 16 digits in the log) are found wherever they come first.
	for pass := 0; pass < 2; pass++ {
		for i, f := range files {
			b := contents[i]
			if b == nil {
				continue
			}
			var nb []byte
			if f.json {
				nb = rewriteJSONStrings(b, func(s string) string { return r.text(s, f.mode) })
			} else {
				nb = []byte(r.text(string(b), f.mode))
			}
			if pass == 1 && !bytes.Equal(nb, b) {
				if err := os.WriteFile(f.path, nb, 0o644); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, d := range []string{NetlinkDir, DevlinkDir, EthtoolNetlinkDir, DCBNetlinkDir} {
		if err := r.replies(filepath.Join(dir, d)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readRegular reads a regular file and nothing else (a snapshot may hold FIFOs or links).
func readRegular(p string) ([]byte, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return os.ReadFile(p)
}

// rewriteJSONStrings applies f to every string value of a JSON document (not to object keys),
// leaving its layout as it was. A document that is not JSON is treated as text.
func rewriteJSONStrings(b []byte, f func(string) string) []byte {
	if !json.Valid(b) {
		return []byte(f(string(b)))
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out.WriteByte(b[i])
			i++
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		j = min(j+1, len(b))
		lit := b[i:j]
		k := j
		for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
			k++
		}
		var s string
		if k < len(b) && b[k] == ':' || json.Unmarshal(lit, &s) != nil {
			out.Write(lit)
		} else if ns := f(s); ns == s {
			out.Write(lit)
		} else {
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.Encode(ns)
			out.Truncate(out.Len() - 1) // Encode's newline
		}
		i = j
	}
	return out.Bytes()
}

// Netlink framing the replies are walked with: a 16-byte nlmsghdr, for generic netlink a 4-byte
// genlmsghdr, then attributes. Anything that does not parse ends the walk: redaction never
// fails on a reply it cannot read.
const (
	nlHdrLen   = 16
	genlHdrLen = 4
	nlMinType  = 0x10 // below: NOOP, ERROR, DONE, OVERRUN
	genlIDCtrl = 0x10 // the generic netlink controller (family resolution)
)

// eachMessage calls fn with each data message's type and the attributes after hdr bytes of
// payload header; the attributes alias b, so fn may rewrite values in place.
func eachMessage(b []byte, hdr int, fn func(typ uint16, attrs []byte)) {
	for len(b) >= nlHdrLen {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		if n < nlHdrLen || n > len(b) {
			return
		}
		if typ := binary.NativeEndian.Uint16(b[4:6]); typ >= nlMinType && n >= nlHdrLen+hdr {
			fn(typ, b[nlHdrLen+hdr:n])
		}
		b = b[min((n+3)&^3, len(b)):]
	}
}

// eachAttr calls fn with each attribute's masked type and value (aliasing b).
func eachAttr(b []byte, fn func(typ uint16, v []byte)) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return
		}
		fn(binary.NativeEndian.Uint16(b[2:4])&0x3fff, b[4:l])
		b = b[min((l+3)&^3, len(b)):]
	}
}

// Devlink attributes that carry serial numbers (include/uapi/linux/devlink.h): the serial number
// (devlink info "serial_number") and the board serial number ("board.serial_number" in
// iproute2's devlink), and the info version nests whose name says they are one.
const (
	devlinkAttrSerial       = 99
	devlinkAttrVersionFixed = 100
	devlinkAttrVersionStore = 102
	devlinkAttrVersionName  = 103
	devlinkAttrVersionValue = 104
	devlinkAttrBoardSerial  = 146
)

// devlinkSerials replaces the serial numbers in devlink replies with stand-ins of the same
// length, so that attribute lengths, and with them the replies, stay valid.
func (r *redactor) devlinkSerials(dir string) error { return eachReply(dir, r.devlinkReply) }

// devlinkReply rewrites the serial numbers of one devlink reply in place.
func (r *redactor) devlinkReply(b []byte) {
	redactString := func(v []byte) {
		s := strings.TrimRight(string(v), "\x00")
		if s == "" {
			return
		}
		copy(v, r.serialStand(s))
	}
	eachMessage(b, genlHdrLen, func(typ uint16, attrs []byte) {
		if typ == genlIDCtrl {
			return
		}
		eachAttr(attrs, func(t uint16, v []byte) {
			switch {
			case t == devlinkAttrSerial || t == devlinkAttrBoardSerial:
				redactString(v)
			case t >= devlinkAttrVersionFixed && t <= devlinkAttrVersionStore:
				var name string
				var value []byte
				eachAttr(v, func(t uint16, v []byte) {
					switch t {
					case devlinkAttrVersionName:
						name = strings.TrimRight(string(v), "\x00")
					case devlinkAttrVersionValue:
						value = v
					}
				})
				if value != nil && strings.Contains(strings.ToLower(name), "serial") {
					redactString(value)
				}
			}
		})
	})
}

// eachReply calls fn with the bytes of every recorded reply under dir and writes back those fn
// changed.
func eachReply(dir string, fn func(b []byte)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		orig := append([]byte(nil), b...)
		fn(b)
		if !bytes.Equal(b, orig) {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// nldev attributes that hold GUIDs, host-order u64 (include/uapi/rdma/rdma_netlink.h,
// RDMA_NLDEV_ATTR_NODE_GUID, _SYS_IMAGE_GUID, _SUBNET_PREFIX).
const (
	nldevAttrNodeGUID     = 6
	nldevAttrSysImageGUID = 7
	nldevAttrSubnetPrefix = 8
)

// nldevGUIDs replaces the node and system-image GUIDs and subnet prefixes in RDMA netlink
// replies with their stand-ins, attribute by attribute.
func (r *redactor) nldevGUIDs(dir string) error { return eachReply(dir, r.nldevReply) }

// nldevReply rewrites the GUIDs of one RDMA netlink reply in place.
func (r *redactor) nldevReply(b []byte) {
	eachMessage(b, 0, func(_ uint16, attrs []byte) {
		eachAttr(attrs, func(t uint16, v []byte) {
			if len(v) != 8 {
				return
			}
			switch t {
			case nldevAttrNodeGUID, nldevAttrSysImageGUID:
				binary.NativeEndian.PutUint64(v, r.guidValue(binary.NativeEndian.Uint64(v)))
			case nldevAttrSubnetPrefix:
				binary.NativeEndian.PutUint64(v, r.gidPrefix(binary.NativeEndian.Uint64(v)))
			}
		})
	})
}

// replies redacts what the structured passes cannot place in raw replies (raw QP contexts,
// health diagnoses, strings): the known GUIDs as 8 bytes in either byte order, the known MACs
// as 6, and identifiers written as text, all with stand-ins of the same length. Values with
// too little in them to be told from a counter (a GUID below 2^32, a MAC of mostly zeros) are
// left to the structured passes.
func (r *redactor) replies(dir string) error {
	subst := map[string]string{}
	for v, s := range r.guids {
		if v < 1<<32 || v == s {
			continue
		}
		var a, b [8]byte
		binary.NativeEndian.PutUint64(a[:], v)
		binary.NativeEndian.PutUint64(b[:], s)
		subst[string(a[:])] = string(b[:])
		binary.BigEndian.PutUint64(a[:], v)
		binary.BigEndian.PutUint64(b[:], s)
		subst[string(a[:])] = string(b[:])
	}
	for v, s := range r.macs {
		var a, b [8]byte
		binary.BigEndian.PutUint64(a[:], v)
		binary.BigEndian.PutUint64(b[:], s)
		if bytes.Count(a[2:], []byte{0}) > 3 {
			continue
		}
		subst[string(a[2:])] = string(b[2:])
	}
	return eachReply(dir, func(b []byte) { r.replyBytes(b, subst) })
}

// replyBytes rewrites one reply in place: the byte forms in subst, then the text forms.
func (r *redactor) replyBytes(b []byte, subst map[string]string) {
	for i := 0; i < len(b); {
		if i+8 <= len(b) {
			if s, ok := subst[string(b[i:i+8])]; ok {
				copy(b[i:], s)
				i += 8
				continue
			}
		}
		if i+6 <= len(b) {
			if s, ok := subst[string(b[i:i+6])]; ok {
				copy(b[i:], s)
				i += 6
				continue
			}
		}
		i++
	}
	if t := r.text(string(b), textMode{binary: true}); len(t) == len(b) {
		copy(b, t)
	}
}
