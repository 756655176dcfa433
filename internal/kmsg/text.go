package kmsg

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kernel logs kept as text: what a plain root tree or a sosreport holds instead of /dev/kmsg
// records. The parsers below turn them into Records so that the checks read them as they read
// /dev/kmsg. What text loses, they fill in as follows:
//   - priority: a "<N>" prefix (dmesg -r) gives it; otherwise the record gets NeutralLevel and
//     NoLevel, and nothing may rank it by level.
//   - time since boot: the "[   12.345678]" stamp printk adds (kernel/printk/printk.c
//     print_time, "[%5lu.%06lu] ") when the line carries it; otherwise the previous record's
//     time plus the wall-clock time elapsed since it, which keeps order and gaps right.
//   - wall-clock time: the line's own (Record.Wall), kept so that findings print it and rules
//     over minutes or hours measure it; an RFC 3164 stamp has no year (a year that goes back a
//     month or more rolls over to the next) and, like dmesg -T, no zone.
//   - sequence: the line order, from 1.
//   - dictionary (SUBSYSTEM, DEVICE): none. The checks fall back to the "driver 0000:3b:00.0: "
//     and "infiniband mlx5_0: " prefixes dev_printk and ibdev_printk put in the text.
//
// A file such as kern.log spans several boots, /dev/kmsg only the running one. Only the last
// boot's records are kept, so that a fault fixed by a reboot is not reported again: a boot
// starts at the kernel's banner (init/main.c linux_banner, "Linux version ...") or where the
// stamp since boot goes backwards.

// ParseSyslog reads a syslog file (/var/log/kern.log, /var/log/messages) and returns the kernel's
// messages, those tagged "kernel:". The timestamps read: the traditional "Dec  1 09:00:00 host
// kernel: ..." (RFC 3164), rsyslog's "2026-12-01T09:00:00.123456+00:00 host kernel: ..." (RFC
// 3339), and journalctl -k's -o short, short-precise ("Dec 01 09:00:00.123456"), short-iso and
// short-iso-precise ("2026-12-01T09:00:00+0100") and short-full ("Tue 2026-12-01 09:00:00 CET").
// Lines of other programs are passed over; lines that do not have the syslog layout are
// counted as skipped.
func ParseSyslog(b []byte) (recs []Record, skipped int) {
	var p textParser
	forLines(b, func(line string) {
		t, rest, zoned, ok := syslogTime(line)
		if !ok {
			p.skip()
			return
		}
		// HOSTNAME TAG: MSG
		_, rest, ok = strings.Cut(rest, " ")
		if !ok {
			p.skip()
			return
		}
		tag, msg, ok := strings.Cut(rest, " ")
		if !ok || !strings.HasSuffix(tag, ":") {
			p.skip()
			return
		}
		if tag != "kernel:" {
			return
		}
		p.add(-1, t, true, msg)
		if !zoned {
			p.recs[len(p.recs)-1].WallNoZone = true
		}
	})
	return p.recs, p.skipped
}

// ParseDmesg reads dmesg output (/var/log/dmesg, a sosreport's sos_commands/kernel/dmesg):
// "[   12.345678] text" lines, "<4>[   12.345678] text" (dmesg -r), "[Tue Dec  1 09:00:00 2026]
// text" (dmesg -T, sos_commands/kernel/dmesg_-T) or bare text (a kernel without printk times);
// also dmesg -x's "kern  :err   : " level, /dev/kmsg read as text ("3,812,14280445220,-;text"),
// journalctl -o short-monotonic ("[   12.345678] host kernel: text") and the "node: " pdsh and
// clush put before each line. Every non-empty line is a message; a line holding NUL bytes (the
// tail a crash leaves in a log file) is counted as skipped.
func ParseDmesg(b []byte) (recs []Record, skipped int) {
	var p textParser
	inKmsg := false
	forLines(b, func(line string) {
		if strings.IndexByte(line, 0) >= 0 {
			p.skip()
			return
		}
		level := -1
		// A line copied from a terminal of pdsh or clush carries the node first ("b1360: [
		// 12.345678] ..."): taken off where a printk stamp or a dmesg -T date follows it.
		line = cutNode(line)
		// /dev/kmsg read as text (Documentation/ABI/testing/dev-kmsg: "prio,seq,usec,flags;"):
		// its level and time since boot.
		if lv, usec, msg, ok := kmsgLine(line); ok {
			p.add(lv, time.Time{}, false, stampText(usec, msg))
			inKmsg = true
			return
		}
		if inKmsg && strings.HasPrefix(line, " ") && strings.Contains(line, "=") {
			// The record's dictionary ("SUBSYSTEM=pci"), as Parse reads it.
			if n := len(p.recs); n > 0 {
				dictField(&p.recs[n-1], line[1:])
			}
			return
		}
		inKmsg = false
		// dmesg -x (util-linux dmesg --decode): "kern  :err   : " before the stamp.
		if lv, rest, ok := decodedLevel(line); ok {
			level, line = lv, rest
		}
		if len(line) >= 3 && line[0] == '<' {
			if end := strings.IndexByte(line, '>'); end > 1 && end <= 4 {
				if n, err := strconv.Atoi(line[1:end]); err == nil && n >= 0 {
					level, line = n&7, line[end+1:]
				}
			}
		}
		var t time.Time
		hasTime := false
		if strings.HasPrefix(line, "[") {
			if end := strings.IndexByte(line, ']'); end > 0 {
				if wt, err := time.Parse("Mon Jan _2 15:04:05 2006", line[1:end]); err == nil {
					t, hasTime, line = wt, true, strings.TrimPrefix(line[end+1:], " ")
				}
			}
		}
		if !hasTime {
			line = cutRelTime(line)
		}
		// A line copied out of a syslog file without its date and host ("kernel: [  13.1] ...",
		// as public reports quote them) is the kernel's message all the same; so is journalctl
		// -o short-monotonic's, whose stamp comes before the host ("[   12.345678] node17
		// kernel: ...").
		line = strings.TrimPrefix(line, "kernel: ")
		if usec, ok, rest := cutStamp(line); ok {
			if host, msg, found := strings.Cut(rest, " kernel: "); found && !strings.ContainsAny(host, " :") || strings.HasPrefix(rest, "kernel: ") {
				if !found {
					msg = strings.TrimPrefix(rest, "kernel: ")
				}
				line = stampText(usec, msg)
			}
		}
		p.add(level, t, hasTime, line)
		if hasTime {
			// dmesg -T prints the host's local time without a zone (dmesg(1), --ctime).
			p.recs[len(p.recs)-1].WallNoZone = true
		}
	})
	return p.recs, p.skipped
}

// cutNode removes a node name and ": " that pdsh(1) and clush(1) put before each line of
// output, where a printk stamp or a dmesg -T date follows it.
func cutNode(line string) string {
	node, rest, ok := strings.Cut(line, ": ")
	if !ok || node == "" || len(node) > 64 || !strings.HasPrefix(rest, "[") {
		return line
	}
	for _, c := range node {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return line
		}
	}
	if _, ok, _ := cutStamp(rest); ok {
		return rest
	}
	if end := strings.IndexByte(rest, ']'); end > 0 {
		if _, err := time.Parse("Mon Jan _2 15:04:05 2006", rest[1:end]); err == nil {
			return rest
		}
	}
	return line
}

// kmsgLine reads a /dev/kmsg record saved as text: "6,1234,5678901,-;message", the header as
// Parse reads it with the kernel's flag field ("-", "c" or "+") after it, the text unescaped.
func kmsgLine(line string) (level int, usec uint64, msg string, ok bool) {
	head, msg, found := strings.Cut(line, ";")
	if !found {
		return 0, 0, "", false
	}
	level, _, usec, fields, ok := recordHeader(head)
	if !ok || len(fields) == 0 || len(fields[0]) != 1 || !strings.Contains("-c+", fields[0]) || usec > math.MaxUint64/2 {
		return 0, 0, "", false
	}
	return level, usec, unescape(msg), true
}

// stampText is a message with its time since boot written as printk does ("[   12.345678] "),
// for the stamp to be read like any other.
func stampText(usec uint64, msg string) string {
	return fmt.Sprintf("[%5d.%06d] %s", usec/1e6, usec%1e6, msg)
}

// decodedLevel reads dmesg -x's "facility:level : " (util-linux sys-utils/dmesg.c: the names
// padded to 6 and 7 columns, "kern  :err   : ").
func decodedLevel(line string) (int, string, bool) {
	fac, rest, ok := strings.Cut(line, ":")
	if !ok || !slices.Contains(facilities, strings.TrimRight(fac, " ")) {
		return 0, "", false
	}
	lv, rest, ok := strings.Cut(rest, ": ")
	if !ok {
		return 0, "", false
	}
	n := slices.Index(levelNames, strings.TrimRight(lv, " "))
	if n < 0 {
		return 0, "", false
	}
	return n, strings.TrimLeft(rest, " "), true
}

// The names dmesg -x prints, as syslog(3) numbers them.
var (
	facilities = []string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp", "res0", "res1", "res2", "res3", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}
	levelNames = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}
)

// cutRelTime removes the stamps of dmesg --reltime and --human (util-linux sys-utils/dmesg.c
// print_reltime): "[Mar15 18:17] " where the minute changes and "[  +0.000010] " between. They
// give neither the time since boot nor a year, so they order the lines and say nothing else.
func cutRelTime(line string) string {
	if !strings.HasPrefix(line, "[") {
		return line
	}
	end := strings.IndexByte(line, ']')
	if end < 0 || end > 16 {
		return line
	}
	st := line[1:end]
	if d := strings.TrimLeft(st, " "); strings.HasPrefix(d, "+") {
		secs, frac, ok := strings.Cut(d[1:], ".")
		if _, err := strconv.ParseUint(secs, 10, 64); ok && err == nil && len(frac) == 6 {
			return strings.TrimPrefix(line[end+1:], " ")
		}
		return line
	}
	if _, err := time.Parse("Jan2 15:04", st); err == nil {
		return strings.TrimPrefix(line[end+1:], " ")
	}
	return line
}

// forLines calls fn with each non-empty line, without its line end.
func forLines(b []byte, fn func(string)) {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) > 0 {
			fn(string(line))
		}
	}
}

// syslogTime reads the timestamp a syslog line starts with and returns the rest after it, and
// whether the stamp had a zone.
func syslogTime(line string) (time.Time, string, bool, bool) {
	// RFC 3164: "Mmm dd hh:mm:ss " with a space-padded day (journalctl's short format pads it
	// with a zero); neither the year nor the zone is written.
	if len(line) > 16 && line[15] == ' ' {
		if t, err := time.Parse("Jan _2 15:04:05", line[:15]); err == nil {
			return t, line[16:], false, true
		}
	}
	// journalctl -o short-precise: the same with microseconds ("Dec 01 09:00:00.123456").
	if len(line) > 23 && line[15] == '.' && line[22] == ' ' {
		if t, err := time.Parse("Jan _2 15:04:05.000000", line[:22]); err == nil {
			return t, line[23:], false, true
		}
	}
	// RFC 3339, as rsyslog's RSYSLOG_FileFormat writes it; journalctl -o short-iso and
	// short-iso-precise write the zone without its colon before systemd 250 ("+0100").
	if f, rest, ok := strings.Cut(line, " "); ok && len(f) >= 20 && f[4] == '-' && f[10] == 'T' {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700"} {
			// Two-digit hours only, and a year a host's clock has shown (1970 on).
			if t, err := time.Parse(layout, f); err == nil && f[13] == ':' && t.UTC().Year() >= 1970 {
				return t, rest, true, true
			}
		}
	}
	// journalctl -o short-full: "Tue 2026-12-01 09:00:00 CET" (the zone as an abbreviation,
	// whose offset Go knows only for UTC: the time is kept as the host wrote it, without zone).
	if len(line) > 24 && line[3] == ' ' && line[8] == '-' && line[14] == ' ' {
		if wday, rest, ok := strings.Cut(line, " "); ok && len(wday) == 3 {
			parts := strings.SplitN(rest, " ", 4)
			if len(parts) == 4 {
				if t, err := time.Parse("2006-01-02 15:04:05", parts[0]+" "+parts[1]); err == nil && t.Year() >= 1970 && len(parts[1]) == 8 {
					return t, parts[3], parts[2] == "UTC", true
				}
			}
		}
	}
	return time.Time{}, "", false, false
}

// textParser assembles records from text lines: times, sequence numbers, boots.
type textParser struct {
	recs    []Record
	skipped int
	// last is the previous record's wall-clock time, when its line had one.
	last    time.Time
	hasLast bool
	// prevStamped says whether the previous record had printk's stamp.
	prevStamped bool
	// years is added to a stamp without a year: the rollovers seen so far.
	years int
}

func (p *textParser) skip() { p.skipped++ }

// add appends one message. level is -1 when the line gave none; t is its wall-clock time when
// hasTime. The text may still start with printk's "[secs]" stamp and caller id.
func (p *textParser) add(level int, t time.Time, hasTime bool, text string) {
	usec, stamped, text := cutStamp(text)
	text = cutCaller(text)
	var prev *Record
	if n := len(p.recs); n > 0 {
		prev = &p.recs[n-1]
	}
	newBoot := strings.HasPrefix(text, "Linux version ") || (stamped && prev != nil && p.prevStamped && usec < prev.Usec)
	if hasTime && t.Year() == 0 {
		// RFC 3164 gives no year: a stamp a month or more before the last one is in the next
		// year (Dec 31 to Jan 1), not eleven months back.
		t = t.AddDate(p.years, 0, 0)
		if p.hasLast && t.Before(p.last.AddDate(0, -1, 0)) {
			p.years++
			t = t.AddDate(1, 0, 0)
		}
	}
	if newBoot {
		p.recs, p.skipped, prev = p.recs[:0], 0, nil
	}
	if !stamped && prev != nil {
		usec = prev.Usec
		if hasTime && p.hasLast && t.After(p.last) {
			usec += uint64(t.Sub(p.last) / time.Microsecond)
		}
	}
	if hasTime {
		p.last, p.hasLast = t, true
	}
	p.prevStamped = stamped
	r := Record{Level: level, Seq: uint64(len(p.recs) + 1), Usec: usec, Text: text, NoStamp: !stamped}
	if hasTime {
		r.Wall = t.UTC()
	}
	if level < 0 {
		r.Level, r.NoLevel = NeutralLevel, true
	}
	p.recs = append(p.recs, r)
}

// cutStamp removes printk's "[%5lu.%06lu] " time stamp from the start of text and returns it in
// microseconds.
func cutStamp(text string) (usec uint64, ok bool, rest string) {
	if !strings.HasPrefix(text, "[") {
		return 0, false, text
	}
	end := strings.IndexByte(text, ']')
	if end < 0 {
		return 0, false, text
	}
	secs, frac, found := strings.Cut(strings.TrimLeft(text[1:end], " "), ".")
	if !found || secs == "" || len(frac) != 6 {
		return 0, false, text
	}
	s, err1 := strconv.ParseUint(secs, 10, 64)
	us, err2 := strconv.ParseUint(frac, 10, 64)
	// A stamp beyond what microseconds in a uint64 hold is not one.
	if err1 != nil || err2 != nil || s > math.MaxUint64/1000000-1 {
		return 0, false, text
	}
	return s*1e6 + us, true, strings.TrimPrefix(text[end+1:], " ")
}

// cutCaller removes the "[  T123] " or "[    C1] " caller id that kernels built with
// CONFIG_PRINTK_CALLER print after the time stamp (printk.c info_print_prefix).
func cutCaller(text string) string {
	if !strings.HasPrefix(text, "[") {
		return text
	}
	end := strings.IndexByte(text, ']')
	if end < 0 {
		return text
	}
	id := strings.TrimLeft(text[1:end], " ")
	if len(id) < 2 || (id[0] != 'T' && id[0] != 'C') {
		return text
	}
	if _, err := strconv.ParseUint(id[1:], 10, 32); err != nil {
		return text
	}
	return strings.TrimPrefix(text[end+1:], " ")
}
