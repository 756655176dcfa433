package kmsg

import (
	"testing"
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
