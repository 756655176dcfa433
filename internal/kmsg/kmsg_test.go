package kmsg

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	in := "3,1201,88123456,-;pcieport 0000:00:02.0: AER: Uncorrected (Non-Fatal) error message received from 0000:00:02.0\n" +
		" SUBSYSTEM=pci\n DEVICE=+pci:0000:00:02.0\n" +
		"4,1202,88123999,-;mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 1): ACCESS_REG(0x805) op_mod(0x1) failed\n" +
		"garbage line without header\n" +
		"6,1203,88124000,c;tab\\x09escaped\n" +
		" DEVICE=+pci:0000:00:03.0\n"
	recs, skipped := Parse([]byte(in))
	if skipped != 1 || len(recs) != 3 {
		t.Fatalf("got %d records, %d skipped: %+v", len(recs), skipped, recs)
	}
	cases := []struct {
		level int
		seq   uint64
		bdf   string
		sub   string
	}{{3, 1201, "0000:00:02.0", "pci"}, {4, 1202, "0000:3b:00.0", ""}, {6, 1203, "0000:00:03.0", ""}}
	for i, c := range cases {
		r := recs[i]
		if r.Level != c.level || r.Seq != c.seq || r.BDF() != c.bdf || r.Subsystem != c.sub {
			t.Errorf("record %d: %+v (bdf %q)", i, r, r.BDF())
		}
	}
	if recs[2].Text != "tab\tescaped" {
		t.Errorf("unescape: %q", recs[2].Text)
	}
	if recs[0].Timestamp() != "88.123456" {
		t.Errorf("timestamp %s", recs[0].Timestamp())
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("3,1,2,-;text\n DEVICE=+pci:0000:00:02.0\n"))
	f.Add([]byte(" orphan continuation\n;\n,,;\n"))
	f.Add([]byte("6,1,2,-;a\\x4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, skipped := Parse(b)
		if skipped < 0 {
			t.Fatal("negative skip count")
		}
		for _, r := range recs {
			_ = r.BDF()
			_ = r.Timestamp()
		}
	})
}

// A record's wall-clock time is shown when the boot time is known and the record's time since
// boot is the kernel's own; the seconds since boot are kept either way.
func TestQuoteWallClock(t *testing.T) {
	r := Record{Usec: 5400_100000, Text: "mlx5_core 0000:5e:00.0: CQ error on CQN 0x4c1, syndrome 0x1"}
	boot := time.Date(2025, 12, 31, 22, 0, 0, 0, time.UTC)
	l := &Log{Boot: boot}
	if got, want := l.Quote(r), "[2025-12-31T23:30:00Z boot+5400.100000s] "+r.Text; got != want {
		t.Errorf("Quote = %q, want %q", got, want)
	}
	if got := l.At(r); got != "at 2025-12-31T23:30:00Z (5400.100000s after boot)" {
		t.Errorf("At = %q", got)
	}
	for name, c := range map[string]struct {
		l *Log
		r Record
	}{
		"boot time unknown": {&Log{}, r},
		"no log":            {nil, r},
		"inferred time":     {l, Record{Usec: r.Usec, Text: r.Text, NoStamp: true}},
	} {
		if got := c.l.Quote(c.r); got != "[5400.100000] "+r.Text {
			t.Errorf("%s: Quote = %q, want the seconds since boot only", name, got)
		}
	}
	// NoStamp survives Encode and Parse (a snapshot of a tree's text log).
	recs, skipped := Parse(Encode([]Record{{Level: 6, Seq: 1, Usec: 7, Text: "x", NoStamp: true}}, 0))
	if skipped != 0 || len(recs) != 1 || !recs[0].NoStamp {
		t.Errorf("round trip lost NoStamp: %+v", recs)
	}
}

func TestTexts(t *testing.T) {
	recs := []Record{{Text: "a"}, {Text: ""}, {Text: "mlx5_core 0000:3b:00.0: b"}}
	if got := Texts(recs); len(got) != 3 || got[0] != "a" || got[1] != "" || got[2] != recs[2].Text {
		t.Errorf("Texts: %q", got)
	}
	if got := Texts(nil); len(got) != 0 {
		t.Errorf("Texts(nil): %q", got)
	}
}
