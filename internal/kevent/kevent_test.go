package kevent

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func table(t *testing.T) *Table {
	t.Helper()
	tb, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// Every entry recognises a line printed from each of its own format strings, with its driver's
// printk prefix before it, and no other entry takes that line.
func TestTableFormatsMatchThemselves(t *testing.T) {
	tb := table(t)
	// A device for the lines that count only about an RDMA device (rdma_only): the samples
	// name its netdev, function and device.
	devs := []Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Netdevs: map[string]int{"ens1f0np0": 1}}}
	for _, s := range tb.All() {
		prefixes := tb.Driver(s.Driver).Prefixes
		if len(prefixes) == 0 {
			prefixes = []string{tb.Driver(s.Driver).Example}
		}
		for _, f := range s.Formats() {
			for _, p := range prefixes {
				switch tb.Driver(s.Driver).Device {
				case "pci":
					p += "0000:3b:00.0: "
				case "net":
					p += "0000:3b:00.0 ens1f0np0: "
				case "ib":
					p += "mlx5_0: "
				}
				line := p + f.Sample(s.ValueSets(), s.Roles())
				evs := tb.Classify([]kmsg.Record{{Level: 3, Text: line}}, devs)
				if len(evs) != 1 || evs[0].Sig != s {
					got := "nothing"
					if len(evs) == 1 && evs[0].Sig != nil {
						got = evs[0].Sig.ID
					}
					t.Errorf("%s (%s): line %q classified as %s", s.ID, s.File, line, got)
				}
			}
		}
	}
}

// Every fault row a signature names exists in the fault table, at the signature's layer.
func TestTableFaultsExist(t *testing.T) {
	layerOf := map[string]string{}
	for _, r := range engine.DefaultFaults().Rows {
		layerOf[r.ID] = r.Layer
	}
	for _, s := range table(t).All() {
		l, ok := layerOf[s.Fault]
		switch {
		case !ok:
			t.Errorf("%s: fault row %q is not in report/faults.json", s.ID, s.Fault)
		case l != s.Layer:
			t.Errorf("%s: layer %q, but fault row %q is of layer %q", s.ID, s.Layer, s.Fault, l)
		}
		if s.Sev.Problem() && !s.Benign && s.Fix == "" {
			t.Errorf("%s: a %s signature needs a fix", s.ID, s.Severity)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		format, line string
		want         []string
	}{
		{"CQ error on CQN 0x%x, syndrome 0x%x", "mlx5_core 0000:3b:00.0: CQ error on CQN 0x4a1, syndrome 0x2", []string{"4a1", "2"}},
		{"%s: Unknown symbol %s (err %d)", "mlx5_ib: Unknown symbol ib_register_device (err -22)", []string{"mlx5_ib", "ib_register_device", "-22"}},
		{"cmdq[%#x]=%#x timedout (%d)msec", "bnxt_re 0000:41:00.0: cmdq[0x4b]=0x12 timedout (20000)msec", []string{"0x4b", "0x12", "20000"}},
		{"assert_var[%d] 0x%08x", "mlx5_core 0000:3b:00.0: assert_var[3] 0x00000000", []string{"3", "00000000"}},
		{"rate %5d%%  done", "x rate    42%  done", []string{"42"}},
		{"addr %pI4 port %hu", "addr 10.0.0.1 port 4791", []string{"10.0.0.1", "4791"}},
		{"bad GUID %*ph on port %d", "x bad GUID 00 1b 21 3a on port 1", []string{"00 1b 21 3a", "1"}},
		{"lg %*phN link added", "smc: SMC-R lg 00000100 link added", []string{"00000100"}},
		{"BAR %d %pR: failed to assign", "pci 0000:04:00.0: BAR 7 [mem size 0x01000000 64bit pref]: failed to assign", []string{"7", "[mem size 0x01000000 64bit pref]"}},
	} {
		f, err := ParseFormat(tc.format)
		if err != nil {
			t.Fatalf("%q: %v", tc.format, err)
		}
		re := f.Expr(nil, nil, false)
		m := mustMatch(t, re, tc.line)
		if strings.Join(m, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q on %q: got %q, want %q", tc.format, tc.line, m, tc.want)
		}
	}
	for _, bad := range []string{"ends in %", "%q is not printk", "%ll"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// Every record of the log is tried against every expression the literals of the log do not rule
// out: each expression needs literal text every match contains (relit's prefilter), or it would
// run the backtracker on every record.
func TestEveryFormatHasPrefilter(t *testing.T) {
	tb := table(t)
	for i, owner := range tb.owner {
		s := tb.sig(owner)
		re := s.res[tb.fidx[i]]
		if err := re.Compile(); err != nil {
			t.Errorf("signature %s: %v", s.ID, err)
			continue
		}
		if len(re.Literals()) == 0 || len(tb.words[i]) == 0 {
			t.Errorf("signature %s: expression %s has no literal every match contains", s.ID, re)
		}
	}
}

// The embedded table is every file of signatures/: a file added there and not to embed.go
// would be left out of every run without a word.
func TestEmbeddedFiles(t *testing.T) {
	onDisk, err := filepath.Glob("signatures/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, p := range onDisk {
		want = append(want, filepath.Base(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range embedded() {
			found = found || e.name == filepath.Base(p) && e.text == string(b)
		}
		if !found {
			t.Errorf("%s: not embedded as it is on disk (embed.go)", p)
		}
	}
	for _, e := range embedded() {
		got = append(got, e.name)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("embedded %v, signatures/ holds %v", got, want)
	}
}

// A signature decoded at its first match is the one the table checked when it loaded, and a
// table file the loader takes apart is refused as a whole file would be.
func TestLazyDecoding(t *testing.T) {
	tb, err := loadTexts(embedded())
	if err != nil {
		t.Fatal(err)
	}
	for i := range tb.entries {
		if tb.entries[i].sig.Load() != nil {
			t.Fatalf("entry %d decoded at load", i)
		}
	}
	all := tb.All()
	if len(all) != len(tb.entries) || len(all) < 1000 {
		t.Fatalf("%d signatures of %d entries", len(all), len(tb.entries))
	}
	ids := map[string]bool{}
	for _, s := range all {
		if s.ID == "" || ids[s.ID] || s.drv == nil || len(s.res) == 0 || s.File == "" {
			t.Fatalf("signature %q of %s decoded incompletely or twice", s.ID, s.File)
		}
		ids[s.ID] = true
	}
	if tb.Signature(all[len(all)-1].ID) != all[len(all)-1] {
		t.Error("Signature(id) is not the decoded entry")
	}
	drv := `"drivers": [{"name": "x", "layer": "driver", "prefixes": ["x: "], "source": "s"}]`
	sig := `{"id": "a", "driver": "x", "format": "a long enough message", "source": "s", "kernels": "6.1", "level": "err", "layer": "driver", "fault": "driver-module", "severity": "warning", "what": "w"}`
	for _, tc := range []struct{ name, text, want string }{
		{"ok", `{` + drv + `, "signatures": [` + sig + `, ` + strings.Replace(sig, `"a"`, `"b"`, 1) + `]}`, ""},
		{"unknown top field", `{` + drv + `, "extra": 1}`, "unknown field"},
		{"unknown signature field", `{` + drv + `, "signatures": [` + strings.Replace(sig, `"id"`, `"idx": 1, "id"`, 1) + `]}`, "unknown field"},
		{"signatures not an array", `{` + drv + `, "signatures": {}}`, "not an array"},
		{"trailing data", `{` + drv + `} {}`, "data after"},
		{"not an object", `[]`, "not a JSON object"},
		{"truncated", `{` + drv + `, "signatures": [` + sig, "EOF"},
		{"duplicate id", `{` + drv + `, "signatures": [` + sig + `, ` + sig + `]}`, "given twice"},
	} {
		tb, err := loadTexts([]tableText{{"t.json", tc.text}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "":
			if s := tb.Signature("b"); s == nil || s.Format != "a long enough message" || s.File != "t.json" {
				t.Errorf("%s: entry b decoded as %+v", tc.name, s)
			}
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
