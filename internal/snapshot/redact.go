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

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// Redaction replaces identifying values with stand-ins, consistently: the same GUID, MAC, IP
// address or hostname maps to the same stand-in everywhere in the snapshot, so that links between
// files (a GID derived from a MAC, a node GUID in sysfs and in netlink) survive.
type redactor struct {
	maps map[string]map[string]string
}

// The patterns are compiled at the first redaction: only `record --redact` uses them, and
// compiling them when the program started was part of every command's start-up.
var (
	// GUIDs (four groups of four hex digits: node_guid, sys_image_guid) and GIDs (eight groups)
	// as sysfs prints them; one pattern so that a GID is never redacted as two GUIDs.
	reHexGroups = lazyRegexp(`\b(?:[0-9a-f]{4}:){3,7}[0-9a-f]{4}\b`)
	reMAC       = lazyRegexp(`\b(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b`)
	reIP4       = lazyRegexp(`\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
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

func (r *redactor) guid(v string) string {
	if v == "0000:0000:0000:0000" {
		return v
	}
	return r.stand("guid", v, func(n int) string { return fmt.Sprintf("0000:0000:0000:%04x", n) })
}

func (r *redactor) mac(v string) string {
	if v == "00:00:00:00:00:00" || strings.EqualFold(v, "ff:ff:ff:ff:ff:ff") {
		return v
	}
	return r.stand("mac", strings.ToLower(v), func(n int) string { return fmt.Sprintf("02:00:00:00:%02x:%02x", n>>8&0xff, n&0xff) })
}

func (r *redactor) ip4(v string) string {
	// Loopback, unspecified and broadcast identify nothing.
	if strings.HasPrefix(v, "127.") || v == "0.0.0.0" || v == "255.255.255.255" {
		return v
	}
	return r.stand("ip4", v, func(n int) string { return fmt.Sprintf("192.0.2.%d", n%254+1) })
}

// gid keeps the kind of GID (link-local, IPv4-mapped, global) and replaces what identifies.
func (r *redactor) gid(v string) string {
	if v == "0000:0000:0000:0000:0000:0000:0000:0000" {
		return v
	}
	g := strings.Split(v, ":")
	if strings.Join(g[:6], ":") == "0000:0000:0000:0000:0000:ffff" {
		a, _ := strconv.ParseUint(g[6], 16, 16)
		b, _ := strconv.ParseUint(g[7], 16, 16)
		ip := r.ip4(fmt.Sprintf("%d.%d.%d.%d", a>>8, a&0xff, b>>8, b&0xff))
		var o [4]int
		fmt.Sscanf(ip, "%d.%d.%d.%d", &o[0], &o[1], &o[2], &o[3])
		return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", o[0], o[1], o[2], o[3])
	}
	prefix := strings.Join(g[:4], ":")
	if g[0] != "fe80" {
		prefix = r.stand("gidprefix", prefix, func(n int) string { return fmt.Sprintf("2001:0db8:0000:%04x", n) })
	}
	iid := r.stand("iid", strings.Join(g[4:], ":"), func(n int) string { return fmt.Sprintf("0000:0000:0000:%04x", n) })
	return prefix + ":" + iid
}

func (r *redactor) text(b []byte) []byte {
	s := string(b)
	s = reHexGroups().ReplaceAllStringFunc(s, func(v string) string {
		switch strings.Count(v, ":") {
		case 3:
			return r.guid(v)
		case 7:
			return r.gid(v)
		}
		return v
	})
	s = reMAC().ReplaceAllStringFunc(s, r.mac)
	s = reIP4().ReplaceAllStringFunc(s, r.ip4)
	for host, stand := range r.maps["host"] {
		s = strings.ReplaceAll(s, host, stand)
	}
	return []byte(s)
}

// Redact rewrites an unpacked snapshot directory in place.
func Redact(dir string) error {
	r := &redactor{maps: map[string]map[string]string{}}
	factsPath := filepath.Join(dir, FactsFile)
	if b, err := os.ReadFile(factsPath); err == nil {
		var f host.Facts
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("%s: %w", FactsFile, err)
		}
		if f.Hostname != "" {
			f.Hostname = r.stand("host", f.Hostname, func(n int) string { return fmt.Sprintf("host-%d", n) })
		}
		if err := writeJSON(factsPath, &f); err != nil {
			return err
		}
	}
	// Text: every regular file under root/ and the kernel log. Files are visited in sorted order
	// so that the stand-ins are the same each time the same host is recorded.
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, RootDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasSuffix(p, ".gz") && filepath.Base(p) != "config" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	files = append(files, filepath.Join(dir, KmsgFile))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if nb := r.text(b); !bytes.Equal(nb, b) {
			if err := os.WriteFile(p, nb, 0o644); err != nil {
				return err
			}
		}
	}
	if err := r.devlinkSerials(filepath.Join(dir, DevlinkDir)); err != nil {
		return err
	}
	if err := r.moduleSerials(filepath.Join(dir, EthtoolNetlinkDir)); err != nil {
		return err
	}
	if err := r.netlink(filepath.Join(dir, NetlinkDir)); err != nil {
		return err
	}
	return r.netlink(filepath.Join(dir, DevlinkDir))
}

// devlinkAttrSerial is DEVLINK_ATTR_INFO_SERIAL_NUMBER (include/uapi/linux/devlink.h).
const devlinkAttrSerial = 99

// devlinkSerials replaces the board serial numbers in devlink info replies with stand-ins of the
// same length, so that attribute lengths, and with them the replies, stay valid.
func (r *redactor) devlinkSerials(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files [][2]string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, [2]string{p, string(b)})
		for _, serial := range genlStrings(b, devlinkAttrSerial) {
			r.stand("serial", serial, func(n int) string {
				sn := fmt.Sprintf("SN%0*d", max(len(serial)-2, 1), n)
				return sn[len(sn)-len(serial):]
			})
		}
	}
	if len(r.maps["serial"]) == 0 {
		return nil
	}
	for _, f := range files {
		nb := f[1]
		for orig, stand := range r.maps["serial"] {
			nb = strings.ReplaceAll(nb, orig+"\x00", stand+"\x00")
		}
		if nb != f[1] {
			if err := os.WriteFile(f[0], []byte(nb), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// genlStrings returns the NUL-terminated string values of top-level attributes of type t in a
// stream of generic netlink messages (16-byte nlmsghdr, 4-byte genlmsghdr, attributes). Anything
// that does not parse ends the scan: redaction never fails on a reply it cannot read.
func genlStrings(b []byte, t uint16) []string {
	var out []string
	for len(b) >= 20 {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		if n < 20 || n > len(b) {
			break
		}
		attrs := b[20:n]
		for len(attrs) >= 4 {
			l := int(binary.NativeEndian.Uint16(attrs[0:2]))
			typ := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
			if l < 4 || l > len(attrs) {
				break
			}
			if typ == t && l > 5 {
				if v := strings.TrimRight(string(attrs[4:l]), "\x00"); v != "" {
					out = append(out, v)
				}
			}
			attrs = attrs[min((l+3)&^3, len(attrs)):]
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return out
}

// netlink replaces node and system-image GUIDs in raw replies: the kernel sends them as host-order
// u64 attributes, so the bytes of each GUID seen in sysfs are replaced by its stand-in's bytes.
func (r *redactor) netlink(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type pair struct{ from, to [8]byte }
	var pairs []pair
	for orig, stand := range r.maps["guid"] {
		pairs = append(pairs, pair{guidBytes(orig), guidBytes(stand)})
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		nb := b
		for _, pr := range pairs {
			nb = bytes.ReplaceAll(nb, pr.from[:], pr.to[:])
		}
		if !bytes.Equal(nb, b) {
			if err := os.WriteFile(p, nb, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func guidBytes(s string) [8]byte {
	v, _ := strconv.ParseUint(strings.ReplaceAll(s, ":", ""), 16, 64)
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return b
}
