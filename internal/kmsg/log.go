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
}

// Time is the wall-clock time of a record: the boot time plus its time since boot. ok is false
// when the boot time is unknown or the record's time since boot was inferred (NoStamp). printk
// stamps with local_clock(), which does not advance while the host is suspended, so on a host
// that suspended and resumed the result is early by the time spent suspended, as dmesg(1) warns
// for --ctime; servers do not suspend.
func (l *Log) Time(r Record) (t time.Time, ok bool) {
	if l == nil || l.Boot.IsZero() || r.NoStamp {
		return time.Time{}, false
	}
	return l.Boot.Add(time.Duration(r.Usec) * time.Microsecond).UTC(), true
}

// Quote formats a record as evidence: "[2026-01-01T01:30:00Z boot+5400.000000s] text" when its
// wall-clock time is known, else "[5400.000000] text" as dmesg prints it.
func (l *Log) Quote(r Record) string {
	return "[" + l.Stamp(r) + "] " + r.Text
}

// Stamp is a record's time: "2026-01-01T01:30:00Z boot+5400.000000s", or the seconds since boot.
func (l *Log) Stamp(r Record) string {
	if t, ok := l.Time(r); ok {
		return t.Format(time.RFC3339) + " boot+" + r.Timestamp() + "s"
	}
	return r.Timestamp()
}

// At says when a record was logged, for a summary: "at 2026-01-01T01:30:00Z (5400.000000s after
// boot)" when the wall-clock time is known, else "5400.000000s after boot".
func (l *Log) At(r Record) string {
	if t, ok := l.Time(r); ok {
		return "at " + t.Format(time.RFC3339) + " (" + r.Timestamp() + "s after boot)"
	}
	return r.Timestamp() + "s after boot"
}

// Between says when a run of records was logged, for a summary.
func (l *Log) Between(first, last Record) string {
	t1, ok1 := l.Time(first)
	t2, ok2 := l.Time(last)
	if ok1 && ok2 {
		return "between " + t1.Format(time.RFC3339) + " and " + t2.Format(time.RFC3339) + " (" + first.Timestamp() + "s to " +
			last.Timestamp() + "s after boot)"
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
