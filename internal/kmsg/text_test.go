package kmsg

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// mlx5Timeout is a real mlx5 command-timeout message, as posted in openucx/ucx issue #7738
// (https://github.com/openucx/ucx/issues/7738, dmesg of node b1360).
const mlx5Timeout = "mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout:1104:(pid 141183): cmd[22]: CREATE_DCT(0x710) No done completion"

type want struct {
	text    string
	usec    uint64
	level   int
	noLevel bool
}

func check(t *testing.T, name string, recs []Record, skipped int, wantSkipped int, ws []want) {
	t.Helper()
	if skipped != wantSkipped || len(recs) != len(ws) {
		t.Fatalf("%s: %d records, %d skipped, want %d and %d: %+v", name, len(recs), skipped, len(ws), wantSkipped, recs)
	}
	for i, w := range ws {
		r := recs[i]
		if r.Text != w.text || r.Usec != w.usec || r.Level != w.level || r.NoLevel != w.noLevel || r.Seq != uint64(i+1) {
			t.Errorf("%s: record %d = %+v, want %+v (seq %d)", name, i, r, w, i+1)
		}
	}
}

func TestParseSyslog(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      string
		skipped int
		want    []want
	}{
		{name: "traditional with stamp",
			in: "Dec  1 09:00:00 node17 kernel: [14280.445220] " + mlx5Timeout + "\n" +
				"Dec  1 09:00:01 node17 systemd[1]: Started Daily apt upgrade.\n" +
				"Dec  1 09:00:02 node17 kernel: [14281.000001] mlx5_core 0000:61:00.0: second\n",
			want: []want{{mlx5Timeout, 14280445220, NeutralLevel, true}, {"mlx5_core 0000:61:00.0: second", 14281000001, NeutralLevel, true}}},
		{name: "journalctl zero-padded day, no stamp: wall-clock gaps",
			in:   "Dec 01 09:00:00 node17 kernel: first\nDec 01 09:00:02 node17 kernel: two seconds later\n",
			want: []want{{"first", 0, NeutralLevel, true}, {"two seconds later", 2000000, NeutralLevel, true}}},
		{name: "rfc3339 without stamp",
			in: "2026-12-01T09:00:00.123456+00:00 node17 kernel: " + mlx5Timeout + "\n" +
				"2026-12-01T09:00:00.623456+00:00 node17 kernel: infiniband mlx5_0: half a second later\n",
			want: []want{{mlx5Timeout, 0, NeutralLevel, true}, {"infiniband mlx5_0: half a second later", 500000, NeutralLevel, true}}},
		{name: "rfc3339 with stamp and caller id",
			in:   "2026-12-01T09:00:00.123456+01:00 node17 kernel: [   12.345678] [  T412] " + mlx5Timeout + "\n",
			want: []want{{mlx5Timeout, 12345678, NeutralLevel, true}}},
		// journalctl(1) output modes other than short: short-precise, short-iso (the zone
		// without a colon before systemd 250), short-iso-precise, short-full.
		{name: "journalctl short-precise",
			in:   "Dec 01 09:00:00.123456 node17 kernel: first\nDec 01 09:00:00.623456 node17 kernel: half a second later\n",
			want: []want{{"first", 0, NeutralLevel, true}, {"half a second later", 500000, NeutralLevel, true}}},
		{name: "journalctl short-iso and short-iso-precise",
			in:   "2026-12-01T09:00:00+0100 node17 kernel: first\n2026-12-01T09:00:01.500000+0100 node17 kernel: [   12.345678] stamped\n",
			want: []want{{"first", 0, NeutralLevel, true}, {"stamped", 12345678, NeutralLevel, true}}},
		{name: "journalctl short-full",
			in:   "Tue 2026-12-01 09:00:00 UTC node17 kernel: first\nTue 2026-12-01 09:00:03 UTC node17 kernel: three seconds later\n",
			want: []want{{"first", 0, NeutralLevel, true}, {"three seconds later", 3000000, NeutralLevel, true}}},
		{name: "malformed lines are counted, other programs passed over",
			in: "garbage\nDec  1 09:00:00\nDec  1 09:00:00 hostonly\nDec  1 09:00:00 host notatag rest\n" +
				"2026-13-45T99:00:00Z host kernel: bad date\n\x00\x00\x00\n" +
				"Dec  1 09:00:00 host sshd[99]: kernel: not the kernel\n" +
				"Dec  1 09:00:03 host kernel: [    1.000000] kept\n",
			skipped: 6,
			want:    []want{{"kept", 1000000, NeutralLevel, true}}},
		{name: "only the last boot is kept",
			in: "Nov 30 10:00:00 host kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n" +
				"Nov 30 10:00:05 host kernel: [    5.000000] " + mlx5Timeout + "\n" +
				"Dec  1 08:00:00 host kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n" +
				"Dec  1 08:00:09 host kernel: [    9.000000] after reboot\n",
			want: []want{{"Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)", 0, NeutralLevel, true}, {"after reboot", 9000000, NeutralLevel, true}}},
		{name: "a stamp going backwards starts a boot even without the banner",
			in:   "Dec  1 08:00:00 host kernel: [  500.000000] old boot\nDec  1 08:10:00 host kernel: [    3.000000] new boot\n",
			want: []want{{"new boot", 3000000, NeutralLevel, true}}},
		{name: "empty and CRLF",
			in:   "\r\n\nDec  1 09:00:00 host kernel: [    2.000000] crlf\r\n",
			want: []want{{"crlf", 2000000, NeutralLevel, true}}},
	} {
		recs, skipped := ParseSyslog([]byte(c.in))
		check(t, c.name, recs, skipped, c.skipped, c.want)
	}
}

func TestParseDmesg(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      string
		skipped int
		want    []want
	}{
		// pocopico/rp-ext issue #129 (https://github.com/pocopico/rp-ext/issues/129): dmesg | grep mlx5.
		{name: "plain dmesg",
			in: "[    5.376443] mlx5_core 0000:01:00.0: firmware version: 14.32.1010\n" +
				"[    5.663152] mlx5_core: probe of 0000:01:00.0 failed with error -22\n",
			want: []want{{"mlx5_core 0000:01:00.0: firmware version: 14.32.1010", 5376443, NeutralLevel, true},
				{"mlx5_core: probe of 0000:01:00.0 failed with error -22", 5663152, NeutralLevel, true}}},
		{name: "dmesg -r keeps the level",
			in:   "<3>[    5.663152] mlx5_core: probe of 0000:01:00.0 failed with error -22\n<12>[    6.000000] user facility\n",
			want: []want{{"mlx5_core: probe of 0000:01:00.0 failed with error -22", 5663152, 3, false}, {"user facility", 6000000, 4, false}}},
		{name: "dmesg -T: wall clock gaps",
			in:   "[Tue Dec  1 09:00:00 2026] " + mlx5Timeout + "\n[Tue Dec  1 09:01:00 2026] a minute later\n",
			want: []want{{mlx5Timeout, 0, NeutralLevel, true}, {"a minute later", 60000000, NeutralLevel, true}}},
		{name: "no printk time, odd brackets kept as text",
			in: "plain line\n[not a stamp] text\n[ 1.5] short fraction\n<x>[    1.000000] bad level\n[99999999999999999999.000000] huge\n",
			want: []want{{"plain line", 0, NeutralLevel, true}, {"[not a stamp] text", 0, NeutralLevel, true}, {"[ 1.5] short fraction", 0, NeutralLevel, true},
				{"<x>[    1.000000] bad level", 0, NeutralLevel, true}, {"[99999999999999999999.000000] huge", 0, NeutralLevel, true}}},
		// dmesg --reltime (util-linux print_reltime), as quoted in a public report of an ice
		// transmit timeout: the stamps are cut, the lines keep their order.
		{name: "dmesg --reltime",
			in:   "[Mar15 18:17] ice 0000:b1:00.0 ens801f0np0: NETDEV WATCHDOG: CPU: 38: transmit queue 14 timed out 80692736 ms\n[  +0.000010] ice 0000:b1:00.0 ens801f0np0: tx_timeout: VSI_num: 3\n[Mar15 18:17 not a stamp\n",
			want: []want{{"ice 0000:b1:00.0 ens801f0np0: NETDEV WATCHDOG: CPU: 38: transmit queue 14 timed out 80692736 ms", 0, NeutralLevel, true}, {"ice 0000:b1:00.0 ens801f0np0: tx_timeout: VSI_num: 3", 0, NeutralLevel, true}, {"[Mar15 18:17 not a stamp", 0, NeutralLevel, true}}},
		// A syslog line quoted without its date and host.
		{name: "kernel: tag left over",
			in:   "kernel: [   13.134460] AMD-Vi: Event logged [\n",
			want: []want{{"AMD-Vi: Event logged [", 13134460, NeutralLevel, true}}},
		// pdsh(1) and clush(1) put the node first; only before a stamp or a date is it taken off.
		{name: "node prefix of a parallel shell",
			in:   "b1360: [14280.445220] " + mlx5Timeout + "\nb1360: [Tue Dec  1 09:00:00 2026] dated\nib0: [not a stamp] kept\n",
			want: []want{{mlx5Timeout, 14280445220, NeutralLevel, true}, {"dated", 14280445220, NeutralLevel, true}, {"ib0: [not a stamp] kept", 14280445220, NeutralLevel, true}}},
		// /dev/kmsg read as text (Documentation/ABI/testing/dev-kmsg): level and time from the
		// header, the dictionary lines no messages (TestKmsgTextDictionary).
		{name: "dev-kmsg records as text",
			in:   "3,812,14280445220,-;" + mlx5Timeout + "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:61:00.0\n6,813,14281000000,c;infiniband mlx5_0: next\n",
			want: []want{{mlx5Timeout, 14280445220, 3, false}, {"infiniband mlx5_0: next", 14281000000, 6, false}}},
		// util-linux dmesg -x (--decode): facility and level names before the stamp.
		{name: "dmesg -x keeps the level",
			in:   "kern  :err   : [14280.445220] " + mlx5Timeout + "\nkern  :info  : [Tue Dec  1 09:00:00 2026] dated\nkern  :bogus : [    1.000000] not a level\n",
			want: []want{{mlx5Timeout, 14280445220, 3, false}, {"dated", 14280445220, 6, false}, {"kern  :bogus : [    1.000000] not a level", 14280445220, NeutralLevel, true}}},
		// journalctl -o short-monotonic: the stamp, then host and tag.
		{name: "journalctl short-monotonic",
			in:   "[14280.445220] node17 kernel: " + mlx5Timeout + "\n[14281.000000] kernel: tag only\n",
			want: []want{{mlx5Timeout, 14280445220, NeutralLevel, true}, {"tag only", 14281000000, NeutralLevel, true}}},
		{name: "NUL tail of a crashed log",
			in:      "[    1.000000] before\n\x00\x00\x00\x00\n",
			skipped: 1,
			want:    []want{{"before", 1000000, NeutralLevel, true}}},
	} {
		recs, skipped := ParseDmesg([]byte(c.in))
		check(t, c.name, recs, skipped, c.skipped, c.want)
	}
}

// The records a text parser gives go through Encode and Parse unchanged, with the unparsed
// lines still counted; and the signature helpers read the device from the text.
func TestEncodeRoundTrip(t *testing.T) {
	recs := []Record{
		{Level: 3, Seq: 1, Usec: 12, Text: `ctl` + "\x01\t\\x41\xff" + `end`, Subsystem: "pci", Device: "+pci:0000:3b:00.0"},
		{Level: NeutralLevel, NoLevel: true, Seq: 2, Usec: 13, Text: mlx5Timeout},
	}
	got, skipped := Parse(Encode(recs, 2))
	if skipped != 2 || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: %d skipped\n got %+v\nwant %+v", skipped, got, recs)
	}
	if got[1].BDF() != "0000:61:00.0" {
		t.Errorf("BDF from text: %q", got[1].BDF())
	}
	if strings.Contains(string(Encode(recs, 0)), "\t") {
		t.Error("control bytes must be escaped")
	}
}

func fuzzText(f *testing.F, parse func([]byte) ([]Record, int), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, skipped := parse(b)
		if skipped < 0 {
			t.Fatal("negative skip count")
		}
		back, unparsed := Parse(Encode(recs, skipped))
		if unparsed != skipped || !reflect.DeepEqual(back, recs) && len(recs) > 0 {
			t.Fatalf("encode/parse changed the records: %+v -> %+v (%d/%d)", recs, back, skipped, unparsed)
		}
		for i, r := range recs {
			if r.Seq != uint64(i+1) || r.Level < 0 || r.Level > 7 || strings.ContainsAny(r.Text, "\n") {
				t.Fatalf("record %d: %+v", i, r)
			}
			_ = r.BDF()
		}
	})
}

func FuzzParseSyslog(f *testing.F) {
	fuzzText(f, ParseSyslog,
		"Dec  1 09:00:00 node17 kernel: [14280.445220] "+mlx5Timeout+"\n",
		"2026-12-01T09:00:00.123456+00:00 node17 kernel: [   12.345678] [  T412] x\n",
		"Dec  1 09:00:00 host kernel: [    0.000000] Linux version 6\nDec  1 09:00:01 host kernel: y\n",
		"garbage\n\x00\n",
		"Dec 01 09:00:00.123456 node17 kernel: x\n2026-12-01T09:00:00+0100 h kernel: y\nTue 2026-12-01 09:00:00 UTC h kernel: z\n")
}

func FuzzParseDmesg(f *testing.F) {
	fuzzText(f, ParseDmesg,
		"[    5.376443] mlx5_core 0000:01:00.0: firmware version: 14.32.1010\n",
		"<3>[    5.663152] mlx5_core: probe of 0000:01:00.0 failed with error -22\n",
		"[Tue Dec  1 09:00:00 2026] x\n[Tue Dec  1 09:01:00 2026] y\n",
		"[ 1.5] z\n\x00\n",
		"b1360: [    1.000000] a\n3,812,14280445220,-;b\n SUBSYSTEM=pci\nkern  :err   : [    2.000000] c\n[    3.000000] node17 kernel: d\n")
}

// Syslog and dmesg -T lines keep their wall-clock time: an RFC 3164 stamp without its year or
// zone rolls over from December to January, an RFC 3339 one keeps its instant, and both survive
// Encode and Parse, so that a recording of a tree's log still has them.
func TestTextWallClock(t *testing.T) {
	recs, _ := ParseSyslog([]byte("Dec 31 23:59:58 node17 kernel: mlx5_core 0000:01:00.1 eth1: Link down\n" +
		"Jan  1 00:00:03 node17 kernel: mlx5_core 0000:01:00.1 eth1: Link up\n"))
	if len(recs) != 2 || recs[1].Usec-recs[0].Usec != 5000000 {
		t.Fatalf("across the new year the gap is lost: %+v", recs)
	}
	if !recs[0].WallNoZone || recs[1].Wall.Sub(recs[0].Wall) != 5*time.Second || recs[0].Wall.Year() >= 1000 {
		t.Errorf("RFC 3164 wall-clock times %v, %v (no zone %v)", recs[0].Wall, recs[1].Wall, recs[0].WallNoZone)
	}
	z, _ := ParseSyslog([]byte("2024-11-03T14:02:11.123456+01:00 host kernel: x\n"))
	if len(z) != 1 || z[0].WallNoZone || !z[0].Wall.Equal(time.Date(2024, 11, 3, 13, 2, 11, 123456000, time.UTC)) {
		t.Errorf("RFC 3339 wall-clock time: %+v", z)
	}
	d, _ := ParseDmesg([]byte("[Sun Nov  3 14:02:11 2024] mlx5_core 0000:3b:00.0: x\n"))
	if len(d) != 1 || !d[0].WallNoZone || d[0].Wall != time.Date(2024, 11, 3, 14, 2, 11, 0, time.UTC) {
		t.Errorf("dmesg -T wall-clock time: %+v", d)
	}
	for _, rs := range [][]Record{recs, z, d} {
		back, _ := Parse(Encode(rs, 0))
		if !reflect.DeepEqual(back, rs) {
			t.Errorf("encode/parse lost the wall-clock time: %+v -> %+v", rs, back)
		}
	}
}

// A line that carries only a wall-clock time is quoted and dated by it, never by a time since
// boot it does not have; ages are measured on the same clock, from the log's newest line.
func TestLogWallClockText(t *testing.T) {
	recs, _ := ParseSyslog([]byte("Mar 27 15:37:34 cc1 kernel: mlx5_core 0000:01:00.1 eth1: Link up\n" +
		"Mar 27 15:38:19 cc1 kernel: mlx5_core 0000:01:00.1 eth1: Link up\n" +
		"2024-11-03T14:02:11.123456+00:00 cc1 kernel: [   12.500000] stamped\n"))
	l := &Log{Records: recs, Latest: Latest(recs[:2])}
	if got := l.At(recs[0]); got != "at Mar 27 15:37:34" {
		t.Errorf("At = %q", got)
	}
	if got := l.Between(recs[0], recs[1]); got != "between Mar 27 15:37:34 and Mar 27 15:38:19" {
		t.Errorf("Between = %q", got)
	}
	if got := l.Quote(recs[2]); got != "[2024-11-03T14:02:11Z boot+12.500000s] stamped" {
		t.Errorf("Quote = %q", got)
	}
	if age, ok := l.Age(recs[0]); !ok || age != 45*time.Second {
		t.Errorf("Age = %v %v", age, ok)
	}
	if _, ok := l.Age(Record{Usec: 5}); ok {
		t.Error("a record without a wall-clock time has an age")
	}
}

// /dev/kmsg saved as text is read as Parse reads the device: the dictionary names the record's
// device, and the kernel's \xNN escapes are undone.
func TestKmsgTextDictionary(t *testing.T) {
	recs, skipped := ParseDmesg([]byte("3,812,14280445220,-;mlx5_core 0000:61:00.0: tab\\x09here\n SUBSYSTEM=pci\n DEVICE=+pci:0000:61:00.0\n-1,813,1,-;negative priority\n"))
	if len(recs) != 2 || skipped != 0 {
		t.Fatalf("%d records, %d skipped: %+v", len(recs), skipped, recs)
	}
	if r := recs[0]; r.Device != "+pci:0000:61:00.0" || r.Subsystem != "pci" || r.Text != "mlx5_core 0000:61:00.0: tab\there" {
		t.Errorf("%+v", r)
	}
	if r := recs[1]; !r.NoLevel || r.Text != "-1,813,1,-;negative priority" {
		t.Errorf("a header with a negative priority is read as a record: %+v", r)
	}
}
