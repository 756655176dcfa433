package kmsg

import (
	"strconv"
	"strings"
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
}

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
