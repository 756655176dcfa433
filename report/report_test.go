package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestDefaultFaultsParse(t *testing.T) {
	ft := DefaultFaults()
	for _, id := range []string{"pcie-interface", "dma-engine", "qp-context", "cq-eq", "firmware", "driver-module", "port-link", "user-verbs"} {
		if _, ok := ft.Row(id); !ok {
			t.Errorf("fault table lacks the seed row %q", id)
		}
	}
	// Rows are in troubleshooting order: a row's layer never comes before the previous row's.
	prev := -1
	for _, r := range ft.Rows {
		if LayerRank(r.Layer) < prev {
			t.Errorf("row %q (layer %s) is out of troubleshooting order", r.ID, r.Layer)
		}
		prev = LayerRank(r.Layer)
	}
}

func TestParseFaultsRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"duplicate":     `{"rows":[{"id":"a","layer":"pcie","explains":[]},{"id":"a","layer":"qp","explains":[]}]}`,
		"bad layer":     `{"rows":[{"id":"a","layer":"gpu","explains":[]}]}`,
		"unknown row":   `{"rows":[{"id":"a","layer":"pcie","explains":["fault:b"]}]}`,
		"bad pattern":   `{"rows":[{"id":"a","layer":"pcie","explains":["check:["]}]}`,
		"bare explains": `{"rows":[{"id":"a","layer":"pcie","explains":["qp-context"]}]}`,
		"not json":      `{"rows":`,
	} {
		if _, err := ParseFaults([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// f builds a finding; the runner marks probes from the registry, here the *_probe ids stand in.
func f(check string, sev Severity, fault, subject, device string) Finding {
	return Finding{CheckID: check, Severity: sev, Fault: fault, Summary: check + " " + subject,
		Subject: Subject{Kind: "x", Name: subject, Device: device}, Probe: strings.HasSuffix(check, "_probe")}
}

func TestLinkCausesToConsequences(t *testing.T) {
	fs := []Finding{
		f("driver.modules", Critical, "driver-module", "ib_core", ""),
		f("driver.devices", Critical, "rdma-device", "host", ""),
		f("port.state", Critical, "port-link", "mlx5_0/1", "mlx5_0"),
		f("qp.loopback_probe", Critical, "qp-context", "mlx5_0/1", "mlx5_0"),
		f("qp.loopback_probe", Critical, "qp-context", "mlx5_1/1", "mlx5_1"),
		f("pcie.aer", Critical, "pcie-interface", "0000:3b:00.0", "mlx5_1"),
		f("qp.state", Warning, "qp-context", "mlx5_1", "mlx5_1"),
		f("cq.depth", OK, "cq-eq", "mlx5_1", "mlx5_1"),
	}
	r := Build(fs, DefaultFaults(), Tool{Name: "rdmadiag"}, HostInfo{Devices: []string{"mlx5_0", "mlx5_1"}})
	by := map[string]Finding{}
	for _, x := range r.Findings {
		by[x.Ref] = x
	}
	// Causes are listed in troubleshooting order; intermediate causes (no device) stay listed
	// next to the root (ib_core) so that a reader can follow the chain.
	want := map[string][]string{
		"driver.devices@host":        {"driver.modules@ib_core"},
		"port.state@mlx5_0/1":        {"driver.modules@ib_core"},
		"qp.loopback_probe@mlx5_0/1": {"driver.devices@host", "driver.modules@ib_core", "port.state@mlx5_0/1"},
		"qp.loopback_probe@mlx5_1/1": {"pcie.aer@0000:3b:00.0", "driver.devices@host", "driver.modules@ib_core", "qp.state@mlx5_1"},
		"qp.state@mlx5_1":            {"pcie.aer@0000:3b:00.0", "driver.modules@ib_core"},
		"driver.modules@ib_core":     nil,
		"pcie.aer@0000:3b:00.0":      nil,
		"cq.depth@mlx5_1":            nil,
	}
	for ref, causes := range want {
		got, ok := by[ref]
		if !ok {
			t.Fatalf("no finding %s", ref)
		}
		if strings.Join(got.ExplainedBy, ",") != strings.Join(causes, ",") {
			t.Errorf("%s explained by %v, want %v", ref, got.ExplainedBy, causes)
		}
	}
	// A device-scoped cause never explains another device's finding.
	for _, c := range by["qp.loopback_probe@mlx5_1/1"].ExplainedBy {
		if c == "port.state@mlx5_0/1" {
			t.Error("mlx5_0's port explains mlx5_1's probe")
		}
	}
	// ib_core explains nothing about PCIe errors, so the AER finding stays a root cause of its own.
	if strings.Join(r.Summary.RootCauses, ",") != "pcie.aer@0000:3b:00.0,driver.modules@ib_core" {
		t.Errorf("root causes %v", r.Summary.RootCauses)
	}
	if r.Summary.ExitCode != ExitCritical || r.Summary.Verdict != "critical" {
		t.Errorf("verdict %s/%d", r.Summary.Verdict, r.Summary.ExitCode)
	}
}

func TestVerdictAndExitCode(t *testing.T) {
	const limited = Severity(-1) // a skip held back by a limit (no root, no kernel log)
	cases := []struct {
		sevs    []Severity
		opts    BuildOptions
		verdict string
		code    int
	}{
		// Nothing judged is not health: no finding at all, or only skips.
		{nil, BuildOptions{}, "unknown", 3},
		{[]Severity{Skipped, limited}, BuildOptions{}, "unknown", 3},
		{[]Severity{OK, Info, Skipped}, BuildOptions{}, "healthy", 0},
		// A skip the operator's limits explain does not make the verdict unknown...
		{[]Severity{OK, limited}, BuildOptions{}, "healthy", 0},
		{[]Severity{Warning, limited}, BuildOptions{}, "warning", 1},
		// ...unless --strict asks for certainty.
		{[]Severity{OK, limited}, BuildOptions{Strict: true}, "unknown", 3},
		{[]Severity{OK, Skipped}, BuildOptions{Strict: true}, "healthy", 0},
		{[]Severity{OK, Warning}, BuildOptions{}, "warning", 1},
		{[]Severity{Warning, Unknown}, BuildOptions{}, "unknown", 3},
		{[]Severity{Unknown, Critical, Warning}, BuildOptions{}, "critical", 2},
		{[]Severity{Unknown}, BuildOptions{}, "unknown", 3},
		{[]Severity{Critical, OK}, BuildOptions{Interrupted: true}, "interrupted", 130},
	}
	for _, c := range cases {
		var fs []Finding
		for i, s := range c.sevs {
			x := f("port.state", s, "port-link", string(rune('a'+i)), "")
			if s == limited {
				x = f("port.state", Skipped, "port-link", string(rune('a'+i)), "").SkippedBy(LimitPrivilege, "run as root")
			}
			fs = append(fs, x)
		}
		r := BuildWith(fs, DefaultFaults(), Tool{}, HostInfo{}, c.opts)
		if r.Summary.Verdict != c.verdict || r.Summary.ExitCode != c.code {
			t.Errorf("%v %+v: got %s/%d, want %s/%d", c.sevs, c.opts, r.Summary.Verdict, r.Summary.ExitCode, c.verdict, c.code)
		}
	}
}

func TestOrderIsTroubleshootingFlowAndDeterministic(t *testing.T) {
	fs := []Finding{
		f("cq.depth", OK, "cq-eq", "b", ""),
		f("qp.state", OK, "qp-context", "mlx5_10", ""),
		f("qp.state", OK, "qp-context", "mlx5_2", ""),
		f("pcie.link", OK, "pcie-interface", "z", ""),
		f("firmware.version", OK, "firmware", "a", ""),
	}
	r := Build(fs, DefaultFaults(), Tool{}, HostInfo{})
	var got []string
	for _, x := range r.Findings {
		got = append(got, x.Ref)
	}
	want := "pcie.link@z firmware.version@a qp.state@mlx5_2 qp.state@mlx5_10 cq.depth@b"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
	// Duplicate refs get a suffix so that links stay unambiguous.
	r = Build([]Finding{f("port.state", OK, "port-link", "p", ""), f("port.state", OK, "port-link", "p", "")}, DefaultFaults(), Tool{}, HostInfo{})
	if r.Findings[0].Ref == r.Findings[1].Ref {
		t.Errorf("duplicate refs %q", r.Findings[0].Ref)
	}
}

func TestSeverityText(t *testing.T) {
	for _, s := range []Severity{OK, Skipped, Info, Unknown, Warning, Critical} {
		b, _ := s.MarshalText()
		var back Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%v round-trips to %v (%v)", s, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("fatal")); err == nil {
		t.Error("unknown severity accepted")
	}
}

func TestRenderers(t *testing.T) {
	r := Build([]Finding{
		f("driver.modules", Critical, "driver-module", "ib_core", ""),
		f("driver.devices", Critical, "rdma-device", "host", ""),
	}, DefaultFaults(), Tool{Name: "rdmadiag", Version: "t"}, HostInfo{Source: "live"})
	var tb, cb bytes.Buffer
	if err := RenderTable(&tb, r, RenderOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tb.String(), "\x1b[") {
		t.Error("colour without Color")
	}
	// The summary line is wrapped with a hanging indent of two spaces.
	unwrapped := strings.ReplaceAll(tb.String(), "\n  ", " ")
	for _, want := range []string{"driver.modules", "(consequence)", "cause:    driver.modules@ib_core", r.Summary.Line} {
		if !strings.Contains(unwrapped, want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	if err := RenderTable(&cb, r, RenderOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cb.String(), ansiRed+"CRITICAL"+ansiReset) {
		t.Error("no colour with Color")
	}
	var jb bytes.Buffer
	if err := RenderJSON(&jb, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.SchemaVersion != SchemaVersion || len(back.Findings) != 2 || back.Findings[0].Ref != "driver.devices@host" ||
		len(back.Findings[0].ExplainedBy) != 1 || back.Findings[0].ExplainedBy[0] != "driver.modules@ib_core" {
		t.Errorf("JSON round trip lost data: %+v", back)
	}
	if _, err := Lookup("yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestNaturalLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"mlx5_2", "mlx5_10", true}, {"mlx5_10", "mlx5_2", false}, {"a", "b", true}, {"x1", "x1", false}, {"p", "p1", true}} {
		if got := naturalLess(c.a, c.b); got != c.less {
			t.Errorf("naturalLess(%q,%q)=%v", c.a, c.b, got)
		}
	}
}

func TestCheckProvidedLinks(t *testing.T) {
	up := f("pcie.aer", Critical, "pcie-interface", "0000:00:02.0", "rxe0")
	ep := f("pcie.aer", Warning, "pcie-interface", "0000:01:00.0", "rxe0")
	ep.ExplainedBy = []string{"pcie.aer@0000:00:02.0"}
	stray := f("port.state", Warning, "port-link", "rxe0/1", "rxe0")
	stray.ExplainedBy = []string{"pcie.aer@9999:00:00.0"}
	r := Build([]Finding{ep, up, stray}, DefaultFaults(), Tool{}, HostInfo{})
	got := map[string][]string{}
	for _, x := range r.Findings {
		got[x.Ref] = x.ExplainedBy
	}
	if strings.Join(got["pcie.aer@0000:01:00.0"], ",") != "pcie.aer@0000:00:02.0" {
		t.Errorf("a check's own link was lost: %v", got)
	}
	if len(got["port.state@rxe0/1"]) != 0 {
		t.Errorf("a link to a finding that does not exist was kept: %v", got["port.state@rxe0/1"])
	}
	if strings.Join(r.Summary.RootCauses, ",") != "pcie.aer@0000:00:02.0,port.state@rxe0/1" {
		t.Errorf("root causes %v", r.Summary.RootCauses)
	}
}

func TestSkippedFindingsAreLinkedOnlyForProbes(t *testing.T) {
	r := Build([]Finding{
		f("port.state", Critical, "port-link", "rxe0/1", "rxe0"),
		f("qp.loopback_probe", Skipped, "qp-context", "rxe0/1", "rxe0"),
		f("cq.depth", Skipped, "cq-eq", "rxe0", "rxe0"),
		f("qp.state", Unknown, "qp-context", "rxe0", "rxe0"),
	}, DefaultFaults(), Tool{}, HostInfo{})
	for _, x := range r.Findings {
		switch x.CheckID {
		case "qp.state":
			if len(x.ExplainedBy) != 0 {
				t.Errorf("a finding that could not be judged is nobody's consequence: %v", x.ExplainedBy)
			}
		case "qp.loopback_probe":
			if len(x.ExplainedBy) != 1 {
				t.Errorf("a probe skipped on a down port is its consequence: %v", x.ExplainedBy)
			}
		case "cq.depth":
			if len(x.ExplainedBy) != 0 {
				t.Errorf("a check skipped for its own reason is nobody's consequence: %v", x.ExplainedBy)
			}
		}
	}
	var b bytes.Buffer
	RenderTable(&b, r, RenderOptions{})
	if strings.Contains(b.String(), "SKIPPED cq.depth") {
		t.Error("details list a skipped finding without --verbose")
	}
	b.Reset()
	RenderTable(&b, r, RenderOptions{Verbose: true})
	if !strings.Contains(b.String(), "SKIPPED cq.depth") {
		t.Error("--verbose details omit a skipped finding")
	}
}

// --problems keeps only warnings, criticals and unknowns in the table, says how many rows it
// left out, and on a clean host prints no empty table.
func TestRenderProblemsOnly(t *testing.T) {
	fs := []Finding{
		{CheckID: "pcie.link", Layer: "pcie", Subject: Subject{Kind: "pci", Name: "0000:3b:00.0"}, Severity: OK, Summary: "link fine"},
		{CheckID: "port.state", Layer: "port", Subject: Subject{Kind: "port", Name: "mlx5_0/1"}, Severity: Warning, Summary: "port flapping"},
		{CheckID: "qp.state", Layer: "qp", Subject: Subject{Kind: "device", Name: "mlx5_0"}, Severity: Skipped, Summary: "nothing to see"},
	}
	render := func(fs []Finding) string {
		var b strings.Builder
		if err := RenderTable(&b, Build(fs, DefaultFaults(), Tool{Name: "rdmadiag"}, HostInfo{}), RenderOptions{Problems: true}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	got := render(fs)
	if !strings.Contains(got, "port flapping") || strings.Contains(got, "link fine") || strings.Contains(got, "nothing to see") {
		t.Errorf("table with --problems:\n%s", got)
	}
	if !strings.Contains(got, "2 passing, informational or skipped finding(s) not shown") {
		t.Errorf("no count of the rows left out:\n%s", got)
	}
	got = render(fs[:1])
	if strings.Contains(got, "LAYER") || !strings.Contains(got, "no warning, critical or unknown finding; 1 passing") {
		t.Errorf("clean host with --problems:\n%s", got)
	}
}

// A finding's own Explains narrows its row's: a missing connection manager belongs to the
// driver-module row but explains nothing, so the absent uverbs device is not laid at its door.
func TestFindingExplainsNarrowsItsRow(t *testing.T) {
	cm := f("driver.modules", Warning, "driver-module", "rdma_ucm", "")
	cm.Explains = []string{}
	core := f("driver.modules", Critical, "driver-module", "ib_uverbs", "")
	r := Build([]Finding{cm, core, f("driver.userverbs", Critical, "user-verbs", "rxe0", "rxe0")}, DefaultFaults(), Tool{}, HostInfo{})
	for _, x := range r.Findings {
		if x.CheckID == "driver.userverbs" && strings.Join(x.ExplainedBy, ",") != "driver.modules@ib_uverbs" {
			t.Errorf("explained by %v, want only driver.modules@ib_uverbs", x.ExplainedBy)
		}
	}
}

// A consequence that names its cause (AlsoExplainedBy) is linked to it beyond the fault table,
// only when the cause is a problem on the same device; a finding that names none is not.
func TestAlsoExplainedBy(t *testing.T) {
	build := func(causeSev Severity, causeDev string, also []string) []string {
		flap := f("port.flaps", causeSev, "port-link", causeDev+"/1", causeDev)
		cnt := f("port.counters", Warning, "port-link", "mlx5_0/1", "mlx5_0")
		cnt.AlsoExplainedBy = also
		for _, x := range Build([]Finding{flap, cnt}, DefaultFaults(), Tool{}, HostInfo{}).Findings {
			if x.CheckID == "port.counters" {
				return x.ExplainedBy
			}
		}
		return nil
	}
	also := []string{"check:port.flaps"}
	if got := build(Critical, "mlx5_0", also); strings.Join(got, ",") != "port.flaps@mlx5_0/1" {
		t.Errorf("named cause: explained by %v", got)
	}
	for _, c := range []struct {
		name string
		got  []string
	}{
		{"not named", build(Critical, "mlx5_0", nil)},
		{"cause only info", build(Info, "mlx5_0", also)},
		{"cause on another device", build(Critical, "mlx5_1", also)},
		{"cause on another port", func() []string {
			flap := f("port.flaps", Critical, "port-link", "mlx5_0/2", "mlx5_0")
			cnt := f("port.counters", Warning, "port-link", "mlx5_0/1", "mlx5_0")
			cnt.AlsoExplainedBy = also
			for _, x := range Build([]Finding{flap, cnt}, DefaultFaults(), Tool{}, HostInfo{}).Findings {
				if x.CheckID == "port.counters" {
					return x.ExplainedBy
				}
			}
			return []string{"no port.counters finding"}
		}()},
	} {
		if len(c.got) != 0 {
			t.Errorf("%s: explained by %v", c.name, c.got)
		}
	}
}

// TestRefsFromContent: findings that share a ref get suffixes derived from what they say, the
// same whatever order the checks returned them in, and not changed by PIDs or sizes.
func TestRefsFromContent(t *testing.T) {
	mk := func(pid, sev string) Finding {
		x := f("qp.state", Warning, "qp-context", "mlx5_0/1 pid "+pid+" (trainer) ERR", "mlx5_0")
		x.Key = "mlx5_0/1/qp:trainer/ERR"
		x.Summary = "mlx5_0/1: 3 QP(s) of pid " + pid + " (trainer) in " + sev
		return x
	}
	refs := func(fs ...Finding) []string {
		r := Build(fs, DefaultFaults(), Tool{}, HostInfo{})
		var out []string
		for _, x := range r.Findings {
			out = append(out, x.Ref)
		}
		sort.Strings(out) // the table's order follows subject names, which hold the PIDs
		return out
	}
	a := refs(mk("100", "ERR"), mk("200", "SQE"))
	b := refs(mk("300", "SQE"), mk("400", "ERR"))
	if a[0] == a[1] {
		t.Fatalf("colliding refs not told apart: %v", a)
	}
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("refs depend on order or PIDs: %v then %v", a, b)
	}
	for _, r := range a {
		if strings.Contains(r, "#") || strings.Contains(r, "pid") || !strings.HasPrefix(r, "qp.state@mlx5_0/1/qp:trainer/ERR~") {
			t.Errorf("ref %q", r)
		}
	}
	// Findings that differ only in numbers are still told apart, by their full content.
	c := refs(mk("100", "ERR"), mk("200", "ERR"))
	if c[0] == c[1] {
		t.Errorf("findings differing only in PID share ref %q", c[0])
	}
	if one := refs(mk("100", "ERR")); one[0] != "qp.state@mlx5_0/1/qp:trainer/ERR" {
		t.Errorf("a single finding's ref is %q, want its key", one[0])
	}
}

// A cause drawn from the kernel log links to a consequence only on the same device and, when
// the consequence is log lines too, only within LogLinkWindow; a present state on the device is
// linked whatever the time.
func TestKernelLogLinkWindowAndDevice(t *testing.T) {
	at := func(x Finding, secs ...float64) Finding {
		x.LogSpan = &LogSpan{First: time.Duration(secs[0] * float64(time.Second)), Last: time.Duration(secs[len(secs)-1] * float64(time.Second))}
		return x
	}
	health := at(f("driver.kernel_log", Critical, "firmware-health", "mlx5_0", "mlx5_0"), 6000, 6121)
	hostWide := at(f("driver.kernel_log", Warning, "dma-engine", "kernel log", ""), 3.2)
	for _, tc := range []struct {
		name   string
		cause  Finding
		effect Finding
		linked bool
	}{
		{"same device, within the window", health, at(f("cq.errors", Critical, "cq-eq", "mlx5_0", "mlx5_0"), 6300), true},
		{"same device, before the cause but within the window", health, at(f("cq.errors", Critical, "cq-eq", "mlx5_0", "mlx5_0"), 5500), true},
		{"same device, outside the window", health, at(f("cq.errors", Critical, "cq-eq", "mlx5_0", "mlx5_0"), 6121+601), false},
		{"same device, long before", health, at(f("cq.errors", Critical, "cq-eq", "mlx5_0", "mlx5_0"), 600), false},
		{"other device, same time", health, at(f("cq.errors", Critical, "cq-eq", "mlx5_1", "mlx5_1"), 6010), false},
		{"present state on the device", health, f("port.state", Critical, "port-link", "mlx5_0/1", "mlx5_0"), true},
		{"present state on another device", health, f("port.state", Critical, "port-link", "mlx5_1/1", "mlx5_1"), false},
		{"no device named: not a device's cause", hostWide, f("driver.interrupts", Critical, "cq-eq", "mlx5_1", "mlx5_1"), false},
		{"no device named: a host-wide consequence", hostWide, at(f("cq.errors", Critical, "cq-eq", "kernel log", ""), 10), true},
		{"not from the log: category and device as before", f("pcie.aer", Critical, "pcie-interface", "0000:3b:00.0", ""),
			at(f("cq.errors", Critical, "cq-eq", "mlx5_1", "mlx5_1"), 9000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build([]Finding{tc.cause, tc.effect}, DefaultFaults(), Tool{}, HostInfo{})
			var cause, effect Finding
			for _, x := range r.Findings {
				if x.CheckID == tc.cause.CheckID {
					cause = x
				} else {
					effect = x
				}
			}
			linked := slices.Contains(effect.ExplainedBy, cause.Ref)
			if linked != tc.linked {
				t.Fatalf("linked = %v, want %v (%v)", linked, tc.linked, effect.ExplainedBy)
			}
			stated := false
			for _, e := range effect.Evidence {
				if e.Name == "cause in the kernel log" && strings.Contains(e.Source, LogLinkWindow.String()) && strings.Contains(e.Observed, cause.Ref) {
					stated = true
				}
			}
			if want := linked && tc.cause.LogSpan != nil; stated != want {
				t.Errorf("link evidence stated = %v, want %v: %+v", stated, want, effect.Evidence)
			}
		})
	}
}
