package kmsg

import (
	"strconv"
	"strings"
	"time"
)

// Log is a host's kernel log as one run reads it: parsed once and shared by every check, which
// must treat it as read-only.
type Log struct {
	// Records are in sequence order.
	Records []Record
	// Skipped counts the records (or source lines) that could not be parsed.
	Skipped int
	// Source says where the log was read, for the report: "/dev/kmsg", "kmsg (recorded)",
	// "/var/log/kern.log".
	Source string
	// Cite is the evidence source of a line quoted from the log: "kmsg" for records the kernel
	// gave through /dev/kmsg (live or recorded), else the file they were read from.
	Cite string
	// Partial, when set, says that only the newest part of the log was read, and which part
	// ("only the last 8 MiB of the 20.0 MiB of /var/log/kern.log were read ..."): every
	// judgement drawn from the log says so.
	Partial string
	// Boot is when the host booted (btime in /proc/stat), zero when unknown: a snapshot
	// recorded without /proc/stat, a tree without it.
	Boot time.Time
	// Latest is what Age measures from: the capture time when every wall-clock record carries a
	// zone, else the newest wall-clock time of the records (see Latest and checks.Env.KernelLog).
	Latest time.Time
}

// Time is the wall-clock time of a record: the time its source line carried when that had a
// zone, else the boot time plus its time since boot. ok is false when neither is known (a line
// without a zone, a log without a boot time, a time since boot that was inferred). printk stamps
// with local_clock(), which does not advance while the host is suspended, so on a host that
// suspended and resumed the boot-relative result is early by the time spent suspended, as
// dmesg(1) warns for --ctime; servers do not suspend.
func (l *Log) Time(r Record) (t time.Time, ok bool) {
	if !r.Wall.IsZero() && !r.WallNoZone && r.Wall.Year() >= 1000 {
		return r.Wall.UTC(), true
	}
	if l == nil || l.Boot.IsZero() || r.NoStamp {
		return time.Time{}, false
	}
	return l.Boot.Add(time.Duration(r.Usec) * time.Microsecond).UTC(), true
}

// Latest is the newest wall-clock time the log's source lines carried, the log's own "now" for
// ageing them: a copy of a log file is taken after its last line. Zero when no line had one.
func Latest(recs []Record) time.Time {
	var t time.Time
	seen := false
	for _, r := range recs {
		if !r.Wall.IsZero() && (!seen || r.Wall.After(t)) {
			t, seen = r.Wall, true
		}
	}
	return t
}

// Age is how long before the log's newest line a record was logged, on the clock of its source
// line (a syslog time is compared with the other syslog times, whatever their zone). ok is false
// for a record without a wall-clock time, or a log whose Latest is not set.
func (l *Log) Age(r Record) (time.Duration, bool) {
	if l == nil || r.Wall.IsZero() || l.Latest.IsZero() || r.Wall.After(l.Latest) {
		return 0, false
	}
	return l.Latest.Sub(r.Wall), true
}

// wallText writes a source line's wall-clock time: RFC 3339 in UTC with a zone, the local time
// as "2024-11-03 14:02:11 local" without one, and as the source wrote it ("Nov  3 14:02:11")
// without a year.
func wallText(r Record) string {
	switch {
	case r.Wall.Year() < 1000:
		return r.Wall.Format(time.Stamp)
	case r.WallNoZone:
		return r.Wall.Format(time.DateTime) + " local"
	}
	return r.Wall.UTC().Format(time.RFC3339)
}

// when is a record's time as text, and its time since boot when the kernel stamped it ("" when
// the time since boot was inferred).
func (l *Log) when(r Record) (wall, boot string) {
	if !r.NoStamp {
		boot = r.Timestamp()
	}
	switch {
	case !r.Wall.IsZero():
		wall = wallText(r)
	default:
		if t, ok := l.Time(r); ok {
			wall = t.Format(time.RFC3339)
		}
	}
	return wall, boot
}

// Quote formats a record as evidence: "[2026-01-01T01:30:00Z boot+5400.000000s] text" when its
// wall-clock time is known, else "[5400.000000] text" as dmesg prints it; a line whose source
// gave only a wall-clock time shows that alone.
func (l *Log) Quote(r Record) string {
	return "[" + l.Stamp(r) + "] " + r.Text
}

// Stamp is a record's time: "2026-01-01T01:30:00Z boot+5400.000000s", the wall-clock time
// alone, or the seconds since boot.
func (l *Log) Stamp(r Record) string {
	wall, boot := l.when(r)
	switch {
	case wall != "" && boot != "":
		return wall + " boot+" + boot + "s"
	case wall != "":
		return wall
	}
	return r.Timestamp()
}

// At says when a record was logged, for a summary: "at 2026-01-01T01:30:00Z (5400.000000s after
// boot)", "at Nov  3 14:02:11" for a line with only a wall-clock time, else "5400.000000s after
// boot".
func (l *Log) At(r Record) string {
	wall, boot := l.when(r)
	switch {
	case wall != "" && boot != "":
		return "at " + wall + " (" + boot + "s after boot)"
	case wall != "":
		return "at " + wall
	}
	return r.Timestamp() + "s after boot"
}

// Between says when a run of records was logged, for a summary.
func (l *Log) Between(first, last Record) string {
	w1, b1 := l.when(first)
	w2, b2 := l.when(last)
	switch {
	case w1 != "" && w2 != "" && b1 != "" && b2 != "":
		return "between " + w1 + " and " + w2 + " (" + b1 + "s to " + b2 + "s after boot)"
	case w1 != "" && w2 != "":
		return "between " + w1 + " and " + w2
	}
	return "between " + first.Timestamp() + "s and " + last.Timestamp() + "s after boot"
}

// Since is a record's time since boot.
func (r Record) Since() time.Duration { return time.Duration(r.Usec) * time.Microsecond }

// Encode writes records in /dev/kmsg format, so that a log read from a text file goes through
// the same parser (and into a snapshot) as one read from the kernel. Text and dictionary values
// are escaped as the kernel escapes them (non-printable bytes and '\' as \xNN), so that Parse
// gives the records back. unparsed appends that many lines Parse counts as unparsed: the source
// lines that could not be read as kernel messages stay counted through the conversion.
func Encode(recs []Record, unparsed int) []byte {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(strconv.Itoa(r.Level & 7))
		b.WriteByte(',')
		b.WriteString(strconv.FormatUint(r.Seq, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatUint(r.Usec, 10))
		b.WriteString(",-")
		if r.NoLevel {
			b.WriteString("," + noLevelField)
		}
		if r.NoStamp {
			b.WriteString("," + noStampField)
		}
		if !r.Wall.IsZero() {
			b.WriteString("," + wallField + r.Wall.Format(time.RFC3339Nano))
			if r.WallNoZone {
				b.WriteString("," + noZoneField)
			}
		}
		b.WriteByte(';')
		escape(&b, r.Text)
		b.WriteByte('\n')
		for _, kv := range [][2]string{{"SUBSYSTEM", r.Subsystem}, {"DEVICE", r.Device}} {
			if kv[1] != "" {
				b.WriteString(" " + kv[0] + "=")
				escape(&b, kv[1])
				b.WriteByte('\n')
			}
		}
	}
	for range unparsed {
		// No ';', so not a record: Parse counts it as unparsed.
		b.WriteString("-unparsed source line\n")
	}
	return []byte(b.String())
}

// escape writes s as the kernel writes record text to /dev/kmsg (kernel/printk/printk.c
// msg_add_ext_text): bytes below ' ', from 127 up, and '\' itself as "\xNN".
func escape(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c >= 127 || c == '\\' {
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}
