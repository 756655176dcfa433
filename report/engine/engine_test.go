package engine

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
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
		if report.LayerRank(r.Layer) < prev {
			t.Errorf("row %q (layer %s) is out of troubleshooting order", r.ID, r.Layer)
		}
		prev = report.LayerRank(r.Layer)
	}
}

// Every row of the embedded table gives its findings an action of the vocabulary, never none,
// and so does could_not_check; the published row carries it.
func TestEveryFaultRowHasAnAction(t *testing.T) {
	ft := DefaultFaults()
	if !ft.unknownAction.Valid() || ft.unknownAction == report.ActionNone {
		t.Errorf("could_not_check action %q", ft.unknownAction)
	}
	for _, r := range ft.Rows {
		if !r.Action.Valid() || r.Action == report.ActionNone {
			t.Errorf("row %q: action %q is not a problem's action of report.Actions", r.ID, r.Action)
		}
	}
}

// TestActionOf: the check's action wins; a problem without one takes its row's, an unknown the
// table's could_not_check; other findings carry none.
func TestActionOf(t *testing.T) {
	fs := []Finding{
		f("port.state", report.Critical, "port-link", "mlx5_0/1", "mlx5_0"),
		f("port.rate", report.Warning, "port-link", "mlx5_1/1", "mlx5_1"),
		f("port.counters", report.Unknown, "port-link", "mlx5_2/1", "mlx5_2"),
		f("port.flaps", report.OK, "port-link", "mlx5_3/1", "mlx5_3"),
		f("port.xcvr", report.Skipped, "port-module", "mlx5_3/1", "mlx5_3"),
	}
	fs[0].Action = report.ActionFixConfiguration
	fs[4] = fs[4].SkippedBy(report.LimitSource, "record it")
	r := Build(fs, DefaultFaults(), report.Tool{Name: "rdmadiag"}, report.HostInfo{})
	want := map[string]report.Action{"port.state": report.ActionFixConfiguration, "port.rate": report.ActionReseatOrCleanCable,
		"port.counters": report.ActionFixConfiguration, "port.flaps": "", "port.xcvr": ""}
	for _, f := range r.Findings {
		if f.Action != want[f.CheckID] {
			t.Errorf("%s (%s): action %q, want %q", f.CheckID, f.Severity, f.Action, want[f.CheckID])
		}
	}
	// --strict makes a limited skip unknown, and so gives it an action.
	r = BuildWith(fs, DefaultFaults(), report.Tool{Name: "rdmadiag"}, report.HostInfo{}, BuildOptions{Strict: true})
	for _, f := range r.Findings {
		if f.CheckID == "port.xcvr" && (f.Severity != report.Unknown || f.Action != report.ActionFixConfiguration) {
			t.Errorf("strict: %s %s action %q", f.CheckID, f.Severity, f.Action)
		}
	}
}

func TestParseFaultsRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"duplicate":            `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]},{"id":"a","layer":"qp","action":"reset-device","explains":[]}]}`,
		"bad layer":            `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"gpu","action":"reset-device","explains":[]}]}`,
		"unknown row":          `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"fault":"b"}]}]}`,
		"bad pattern":          `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"check":"["}]}]}`,
		"fault and check":      `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"fault":"a","check":"x"}]}]}`,
		"neither":              `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"same_subject":true}]}]}`,
		"prefixed string":      `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":["fault:a"]}]}`,
		"unknown key":          `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"faults":"a"}]}]}`,
		"observation twice":    `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]}],"observations":[{"check":"x","observation":"o"},{"check":"x","observation":"o"}]}`,
		"observation bad link": `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]}],"observations":[{"check":"x","observation":"o","explained_by":[{"fault":"b"}]}]}`,
		"observation unnamed":  `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]}],"observations":[{"check":"x"}]}`,
		"not json":             `{"rows":`,
		"row without action":   `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","explains":[]}]}`,
		"action not in vocab":  `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reflash","explains":[]}]}`,
		"row action none":      `{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"none","explains":[]}]}`,
		"no could_not_check":   `{"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]}]}`,
		"could_not_check none": `{"could_not_check":{"action":"none"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[]}]}`,
	} {
		if _, err := ParseFaults([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The typed links decode from the table and are published in the document's form.
func TestFaultLinksTyped(t *testing.T) {
	ft, err := ParseFaults([]byte(`{"could_not_check":{"action":"fix-configuration"},"rows":[{"id":"a","layer":"pcie","action":"reset-device","explains":[{"fault":"a"},{"check":"*probe*","same_subject":true}]},{"id":"b","layer":"qp","action":"reset-device","explains":[]}],
		"observations":[{"check":"x.y","observation":"o","explains":[]},{"check":"x.z","observation":"p","explained_by":[{"check":"x.y"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ft.Explains("a"); len(got) != 2 || got[0] != (Link{Fault: "a"}) || got[1] != (Link{Check: "*probe*", SameSubject: true}) {
		t.Errorf("explains %+v", got)
	}
	row, _ := ft.Row("a")
	if strings.Join(row.Explains, ",") != "fault:a,check:*probe*" {
		t.Errorf("published %v", row.Explains)
	}
	if row, _ := ft.Row("b"); row.Explains == nil {
		t.Error("an empty explains list is published as null")
	}
	obs := ft.Observations()
	if len(obs) != 2 || obs[0].Explains == nil || len(obs[0].Explains) != 0 || obs[1].Explains != nil {
		t.Errorf("observations %+v: an empty explains list must stay apart from none", obs)
	}
}

// f builds a finding; the runner marks probes from the registry, here the *_probe ids stand in.
func f(check string, sev report.Severity, fault, subject, device string) Finding {
	return Finding{Finding: report.Finding{CheckID: check, Severity: sev, Fault: fault, Summary: check + " " + subject,
		Subject: report.Subject{Kind: "x", Name: subject, Device: device}}, Probe: strings.HasSuffix(check, "_probe")}
}

func TestLinkCausesToConsequences(t *testing.T) {
	fs := []Finding{
		f("driver.modules", report.Critical, "driver-module", "ib_core", ""),
		f("driver.devices", report.Critical, "rdma-device", "host", ""),
		f("port.state", report.Critical, "port-link", "mlx5_0/1", "mlx5_0"),
		f("qp.loopback_probe", report.Critical, "qp-context", "mlx5_0/1", "mlx5_0"),
		f("qp.loopback_probe", report.Critical, "qp-context", "mlx5_1/1", "mlx5_1"),
		f("pcie.aer", report.Critical, "pcie-interface", "0000:3b:00.0", "mlx5_1"),
		f("qp.state", report.Warning, "qp-context", "mlx5_1", "mlx5_1"),
		f("cq.depth", report.OK, "cq-eq", "mlx5_1", "mlx5_1"),
	}
	r := Build(fs, DefaultFaults(), report.Tool{Name: "rdmadiag"}, report.HostInfo{Devices: []string{"mlx5_0", "mlx5_1"}})
	by := map[string]report.Finding{}
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
	if r.Summary.ExitCode != report.ExitCritical || r.Summary.Verdict != "critical" {
		t.Errorf("verdict %s/%d", r.Summary.Verdict, r.Summary.ExitCode)
	}
}

func TestVerdictAndExitCode(t *testing.T) {
	const limited = report.Severity(-1) // a skip held back by a limit (no root, no kernel log)
	cases := []struct {
		sevs    []report.Severity
		opts    BuildOptions
		verdict string
		code    int
	}{
		// Nothing judged is not health: no finding at all, or only skips.
		{nil, BuildOptions{}, "unknown", 3},
		{[]report.Severity{report.Skipped, limited}, BuildOptions{}, "unknown", 3},
		{[]report.Severity{report.OK, report.Info, report.Skipped}, BuildOptions{}, "healthy", 0},
		// A skip the operator's limits explain does not make the verdict unknown...
		{[]report.Severity{report.OK, limited}, BuildOptions{}, "healthy", 0},
		{[]report.Severity{report.Warning, limited}, BuildOptions{}, "warning", 1},
		// ...unless --strict asks for certainty.
		{[]report.Severity{report.OK, limited}, BuildOptions{Strict: true}, "unknown", 3},
		{[]report.Severity{report.OK, report.Skipped}, BuildOptions{Strict: true}, "healthy", 0},
		{[]report.Severity{report.OK, report.Warning}, BuildOptions{}, "warning", 1},
		{[]report.Severity{report.Warning, report.Unknown}, BuildOptions{}, "unknown", 3},
		{[]report.Severity{report.Unknown, report.Critical, report.Warning}, BuildOptions{}, "critical", 2},
		{[]report.Severity{report.Unknown}, BuildOptions{}, "unknown", 3},
		{[]report.Severity{report.Critical, report.OK}, BuildOptions{Interrupted: true}, "interrupted", 130},
	}
	for _, c := range cases {
		var fs []Finding
		for i, s := range c.sevs {
			x := f("port.state", s, "port-link", string(rune('a'+i)), "")
			if s == limited {
				x = f("port.state", report.Skipped, "port-link", string(rune('a'+i)), "").SkippedBy(report.LimitPrivilege, "run as root")
			}
			fs = append(fs, x)
		}
		r := BuildWith(fs, DefaultFaults(), report.Tool{}, report.HostInfo{}, c.opts)
		if r.Summary.Verdict != c.verdict || r.Summary.ExitCode != c.code {
			t.Errorf("%v %+v: got %s/%d, want %s/%d", c.sevs, c.opts, r.Summary.Verdict, r.Summary.ExitCode, c.verdict, c.code)
		}
	}
}

func TestOrderIsTroubleshootingFlowAndDeterministic(t *testing.T) {
	fs := []Finding{
		f("cq.depth", report.OK, "cq-eq", "b", ""),
		f("qp.state", report.OK, "qp-context", "mlx5_10", ""),
		f("qp.state", report.OK, "qp-context", "mlx5_2", ""),
		f("pcie.link", report.OK, "pcie-interface", "z", ""),
		f("firmware.version", report.OK, "firmware", "a", ""),
	}
	r := Build(fs, DefaultFaults(), report.Tool{}, report.HostInfo{})
	var got []string
	for _, x := range r.Findings {
		got = append(got, x.Ref)
	}
	want := "pcie.link@z firmware.version@a qp.state@mlx5_2 qp.state@mlx5_10 cq.depth@b"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
	// Duplicate refs get a suffix so that links stay unambiguous.
	r = Build([]Finding{f("port.state", report.OK, "port-link", "p", ""), f("port.state", report.OK, "port-link", "p", "")}, DefaultFaults(), report.Tool{}, report.HostInfo{})
	if r.Findings[0].Ref == r.Findings[1].Ref {
		t.Errorf("duplicate refs %q", r.Findings[0].Ref)
	}
}

// Links are the engine's: what a check writes into ExplainedBy is replaced by what the fault
// table and the shared events give.
func TestChecksDoNotLink(t *testing.T) {
	up := f("pcie.aer", report.Critical, "pcie-interface", "0000:00:02.0", "rxe0")
	ep := f("pcie.aer", report.Warning, "pcie-interface", "0000:01:00.0", "rxe0")
	ep.ExplainedBy = []string{"pcie.aer@0000:00:02.0"}
	r := Build([]Finding{ep, up}, DefaultFaults(), report.Tool{}, report.HostInfo{})
	if strings.Join(r.Summary.RootCauses, ",") != "pcie.aer@0000:00:02.0,pcie.aer@0000:01:00.0" {
		t.Errorf("root causes %v", r.Summary.RootCauses)
	}
	if len(ep.ExplainedBy) != 1 {
		t.Error("Build changed its caller's finding")
	}
}

// Problem findings drawn from one event are one root cause: the lower layer, the earlier row,
// the graver, then the subject comes first, whatever order the checks reported in; the others
// say in their evidence that it is the same event. Events of no problem, or of probes, link
// nothing.
func TestSharedEventsOneRootCause(t *testing.T) {
	ev := func(x Finding, events ...string) Finding { x.Events = events; return x }
	rootPort := ev(f("pcie.aer", report.Critical, "pcie-interface", "0000:16:01.0", "mlx5_0"), "aer:0000:16:01.0:uncorrectable")
	fn := ev(f("pcie.aer", report.Critical, "pcie-interface", "0000:19:00.0", "mlx5_0"), "aer:0000:16:01.0:uncorrectable", "pcie-link:0000:18:00.0")
	bw := ev(f("pcie.bandwidth", report.Critical, "pcie-interface", "0000:19:00.0", "mlx5_0"), "pcie-link:0000:18:00.0")
	link := ev(f("pcie.link", report.Warning, "pcie-interface", "0000:19:00.0", "mlx5_0"), "pcie-link:0000:18:00.0")
	sibling := ev(f("pcie.link", report.Warning, "pcie-interface", "0000:19:00.1", "mlx5_1"), "pcie-link:0000:18:00.0")
	quiet := ev(f("pcie.link", report.OK, "pcie-interface", "0000:1a:00.0", "mlx5_2"), "pcie-link:0000:18:00.0")
	probe := ev(f("pcie.bandwidth_probe", report.Critical, "pcie-interface", "mlx5_3", "mlx5_3"), "pcie-link:0000:18:00.0")
	fs := []Finding{rootPort, fn, bw, link, sibling, quiet, probe}
	want := map[string]string{
		"pcie.aer@0000:19:00.0":       "pcie.aer@0000:16:01.0",
		"pcie.bandwidth@0000:19:00.0": "pcie.aer@0000:19:00.0",
		"pcie.link@0000:19:00.0":      "pcie.aer@0000:19:00.0",
		"pcie.link@0000:19:00.1":      "pcie.aer@0000:19:00.0",
	}
	for _, reverse := range []bool{false, true} {
		in := slices.Clone(fs)
		if reverse {
			slices.Reverse(in)
		}
		r := Build(in, DefaultFaults(), report.Tool{}, report.HostInfo{})
		if got := strings.Join(r.Summary.RootCauses, ","); got != "pcie.aer@0000:16:01.0,pcie.bandwidth_probe@mlx5_3" {
			t.Errorf("reverse=%v: root causes %s", reverse, got)
		}
		for _, x := range r.Findings {
			if strings.Join(x.ExplainedBy, ",") != want[x.Ref] {
				t.Errorf("reverse=%v: %s explained by %v, want %q", reverse, x.Ref, x.ExplainedBy, want[x.Ref])
			}
			if want[x.Ref] == "" {
				continue
			}
			if v, ok := evidence(x, "same event as its cause"); !ok || !strings.HasPrefix(v, want[x.Ref]+" was drawn from ") {
				t.Errorf("reverse=%v: %s: evidence %q", reverse, x.Ref, v)
			}
		}
	}
}

func evidence(x report.Finding, name string) (string, bool) {
	for _, e := range x.Evidence {
		if e.Name == name {
			return e.Observed, true
		}
	}
	return "", false
}

func TestSkippedFindingsAreLinkedOnlyForProbes(t *testing.T) {
	r := Build([]Finding{
		f("port.state", report.Critical, "port-link", "rxe0/1", "rxe0"),
		f("qp.loopback_probe", report.Skipped, "qp-context", "rxe0/1", "rxe0"),
		f("cq.depth", report.Skipped, "cq-eq", "rxe0", "rxe0"),
		f("qp.state", report.Unknown, "qp-context", "rxe0", "rxe0"),
	}, DefaultFaults(), report.Tool{}, report.HostInfo{})
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
	render.RenderTable(&b, r, render.RenderOptions{})
	if strings.Contains(b.String(), "SKIPPED cq.depth") {
		t.Error("details list a skipped finding without --verbose")
	}
	b.Reset()
	render.RenderTable(&b, r, render.RenderOptions{Verbose: true})
	if !strings.Contains(b.String(), "SKIPPED cq.depth") {
		t.Error("--verbose details omit a skipped finding")
	}
}

// An observation narrows what its finding's row explains: a missing connection manager belongs
// to the driver-module row but explains nothing, so the absent uverbs device is not laid at its
// door.
func TestObservationNarrowsItsRow(t *testing.T) {
	cm := f("driver.modules", report.Warning, "driver-module", "rdma_ucm", "")
	cm.Observation = "connection-manager-missing"
	core := f("driver.modules", report.Critical, "driver-module", "ib_uverbs", "")
	r := Build([]Finding{cm, core, f("driver.userverbs", report.Critical, "user-verbs", "rxe0", "rxe0")}, DefaultFaults(), report.Tool{}, report.HostInfo{})
	for _, x := range r.Findings {
		if x.CheckID == "driver.userverbs" && strings.Join(x.ExplainedBy, ",") != "driver.modules@ib_uverbs" {
			t.Errorf("explained by %v, want only driver.modules@ib_uverbs", x.ExplainedBy)
		}
	}
	// The same observation stated by another check is not that row of the table.
	other := f("driver.kernel_log", report.Warning, "driver-module", "rdma_ucm", "")
	other.Observation = "connection-manager-missing"
	r = Build([]Finding{other, f("driver.userverbs", report.Critical, "user-verbs", "rxe0", "rxe0")}, DefaultFaults(), report.Tool{}, report.HostInfo{})
	if len(r.Summary.RootCauses) != 1 {
		t.Errorf("another check's observation narrowed its row: root causes %v", r.Summary.RootCauses)
	}
}

// A consequence whose observation names its cause (explained_by) is linked to it beyond the
// fault rows, only when the cause is a problem about the same subject; a finding that states no
// such observation is not.
func TestObservationExplainedBy(t *testing.T) {
	build := func(causeSev report.Severity, causeSubject, causeDev, obs string) []string {
		flap := f("port.flaps", causeSev, "port-link", causeSubject, causeDev)
		cnt := f("port.counters", report.Warning, "port-link", "mlx5_0/1", "mlx5_0")
		cnt.Observation = obs
		for _, x := range Build([]Finding{flap, cnt}, DefaultFaults(), report.Tool{}, report.HostInfo{}).Findings {
			if x.CheckID == "port.counters" {
				return x.ExplainedBy
			}
		}
		return []string{"no port.counters finding"}
	}
	const obs = "link-downed-only"
	if got := build(report.Critical, "mlx5_0/1", "mlx5_0", obs); strings.Join(got, ",") != "port.flaps@mlx5_0/1" {
		t.Errorf("named cause: explained by %v", got)
	}
	for _, c := range []struct {
		name string
		got  []string
	}{
		{"not observed", build(report.Critical, "mlx5_0/1", "mlx5_0", "")},
		{"cause only info", build(report.Info, "mlx5_0/1", "mlx5_0", obs)},
		{"cause on another device", build(report.Critical, "mlx5_1/1", "mlx5_1", obs)},
		{"cause on another port", build(report.Critical, "mlx5_0/2", "mlx5_0", obs)},
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
		x := f("qp.state", report.Warning, "qp-context", "mlx5_0/1 pid "+pid+" (trainer) ERR", "mlx5_0")
		x.Key = "mlx5_0/1/qp:trainer/ERR"
		x.Summary = "mlx5_0/1: 3 QP(s) of pid " + pid + " (trainer) in " + sev
		return x
	}
	refs := func(fs ...Finding) []string {
		r := Build(fs, DefaultFaults(), report.Tool{}, report.HostInfo{})
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
	health := at(f("driver.kernel_log", report.Critical, "firmware-health", "mlx5_0", "mlx5_0"), 6000, 6121)
	hostWide := at(f("driver.kernel_log", report.Warning, "dma-engine", "kernel log", ""), 3.2)
	for _, tc := range []struct {
		name   string
		cause  Finding
		effect Finding
		linked bool
	}{
		{"same device, within the window", health, at(f("cq.errors", report.Critical, "cq-eq", "mlx5_0", "mlx5_0"), 6300), true},
		{"same device, before the cause but within the window", health, at(f("cq.errors", report.Critical, "cq-eq", "mlx5_0", "mlx5_0"), 5500), true},
		{"same device, outside the window", health, at(f("cq.errors", report.Critical, "cq-eq", "mlx5_0", "mlx5_0"), 6121+601), false},
		{"same device, long before", health, at(f("cq.errors", report.Critical, "cq-eq", "mlx5_0", "mlx5_0"), 600), false},
		{"other device, same time", health, at(f("cq.errors", report.Critical, "cq-eq", "mlx5_1", "mlx5_1"), 6010), false},
		{"present state on the device", health, f("port.state", report.Critical, "port-link", "mlx5_0/1", "mlx5_0"), true},
		{"present state on another device", health, f("port.state", report.Critical, "port-link", "mlx5_1/1", "mlx5_1"), false},
		{"no device named: not a device's cause", hostWide, f("driver.interrupts", report.Critical, "cq-eq", "mlx5_1", "mlx5_1"), false},
		{"no device named: a host-wide consequence", hostWide, at(f("cq.errors", report.Critical, "cq-eq", "kernel log", ""), 10), true},
		{"not from the log: category and device as before", f("pcie.aer", report.Critical, "pcie-interface", "0000:3b:00.0", ""),
			at(f("cq.errors", report.Critical, "cq-eq", "mlx5_1", "mlx5_1"), 9000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build([]Finding{tc.cause, tc.effect}, DefaultFaults(), report.Tool{}, report.HostInfo{})
			var cause, effect report.Finding
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
