// Package kmsg parses the kernel log in /dev/kmsg record format and matches it against known
// signatures. Each record is "pri,seq,usec,flags[,...];text" followed by continuation lines
// " KEY=value" (SUBSYSTEM=pci, DEVICE=+pci:0000:3b:00.0) that tie the message to a device.
package kmsg

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Record is one kernel log message.
type Record struct {
	// Level is the syslog severity (0 emerg .. 7 debug).
	Level int
	Seq   uint64
	// Usec is the time since boot in microseconds.
	Usec uint64
	Text string
	// Subsystem and Device come from the dictionary: "pci" and "+pci:0000:3b:00.0".
	Subsystem string
	Device    string
	// NoLevel is set when the source gave no priority (a syslog file or dmesg output without
	// one); Level is then NeutralLevel and says nothing about how grave the message is.
	NoLevel bool
	// NoStamp is set when the source gave no time since boot (a syslog or dmesg line without
	// printk's "[secs]" stamp); Usec is then inferred (see ParseSyslog) and only orders records.
	NoStamp bool
	// Wall is the wall-clock time the source line carried (a syslog stamp, dmesg -T); zero for
	// /dev/kmsg records, whose time is the boot time plus Usec. WallNoZone says the source gave
	// no zone (RFC 3164 syslog, dmesg -T print the host's local time): Wall then holds that
	// local time in UTC's clothes and is compared only with the log's other times. A year before
	// 1000 means the source gave none (RFC 3164): years then only count rollovers.
	Wall       time.Time
	WallNoZone bool
}

// NeutralLevel is the Level of a record whose source gave none: KERN_INFO, a level that claims
// no severity, so that nothing ranks such a line as an error or warning because of its level.
const NeutralLevel = 6

// noLevelField marks, in the header of a record written by Encode, a record whose source gave no
// priority. The kernel's format lets readers add and ignore fields before the ';'
// (Documentation/ABI/testing/dev-kmsg: "Unknown fields and values should be gracefully ignored").
const noLevelField = "nolevel"

// noStampField marks, likewise, a record whose time since boot was inferred, not the kernel's.
const noStampField = "nostamp"

// wallField carries a record's wall-clock time from its source line ("wall=" RFC 3339), and
// noZoneField says that time had no zone.
const (
	wallField   = "wall="
	noZoneField = "nozone"
)

// Texts is the message of each record, in order: what a search over the whole log reads.
func Texts(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Text
	}
	return out
}

// BDF returns the PCI address the record is about: from the dictionary when the kernel gave one,
// else from a "driver 0000:3b:00.0: " prefix in the text (dev_printk format).
func (r Record) BDF() string {
	if b, ok := strings.CutPrefix(r.Device, "+pci:"); ok {
		return b
	}
	f := strings.Fields(r.Text)
	if len(f) >= 2 && len(f[1]) == 13 && f[1][12] == ':' && looksBDF(f[1][:12]) {
		return f[1][:12]
	}
	return ""
}

func looksBDF(s string) bool {
	return len(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.'
}

// Parse reads /dev/kmsg records. Malformed records are skipped: a log is evidence, not input
// that may stop a check; the count of skipped records is returned for the report.
func Parse(b []byte) (recs []Record, skipped int) {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if len(line) == 0 {
			continue
		}
		if line[0] == ' ' {
			if len(recs) == 0 {
				skipped++
				continue
			}
			dictField(&recs[len(recs)-1], string(line[1:]))
			continue
		}
		hdr, text, ok := bytes.Cut(line, []byte{';'})
		if !ok {
			skipped++
			continue
		}
		level, seq, usec, fields, ok := recordHeader(string(hdr))
		if !ok {
			skipped++
			continue
		}
		r := Record{Level: level, Seq: seq, Usec: usec, Text: unescape(string(text))}
		for _, x := range fields {
			switch x {
			case noLevelField:
				r.NoLevel = true
			case noStampField:
				r.NoStamp = true
			case noZoneField:
				r.WallNoZone = true
			default:
				if v, ok := strings.CutPrefix(x, wallField); ok {
					if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
						r.Wall = t.UTC()
					}
				}
			}
		}
		if r.Wall.IsZero() {
			r.WallNoZone = false
		}
		recs = append(recs, r)
	}
	return recs, skipped
}

// recordHeader reads a /dev/kmsg record's header, "prio,seq,usec" and the fields after them
// (Documentation/ABI/testing/dev-kmsg; the priority holds the facility above the level).
func recordHeader(hdr string) (level int, seq, usec uint64, fields []string, ok bool) {
	f := strings.Split(hdr, ",")
	if len(f) < 3 {
		return 0, 0, 0, nil, false
	}
	pri, err1 := strconv.ParseUint(f[0], 10, 16)
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	usec, err3 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, nil, false
	}
	return int(pri & 7), seq, usec, f[3:], true
}

// dictField applies a record's dictionary line (" SUBSYSTEM=pci", " DEVICE=+pci:0000:3b:00.0",
// without its leading space) to it; the kernel escapes values as it escapes the text.
func dictField(r *Record, kv string) {
	k, v, _ := strings.Cut(kv, "=")
	switch k {
	case "SUBSYSTEM":
		r.Subsystem = unescape(v)
	case "DEVICE":
		r.Device = unescape(v)
	}
}

// unescape undoes the kernel's \xNN escaping of non-printable bytes in kmsg text.
func unescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Timestamp formats Usec as the "[  123.456789]" seconds dmesg shows.
func (r Record) Timestamp() string {
	return strconv.FormatFloat(float64(r.Usec)/1e6, 'f', 6, 64)
}
