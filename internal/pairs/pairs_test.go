package pairs

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	for _, n := range []int{2, 3, 6, 7, 16} {
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("n%02d", i)
		}
		rounds := 3
		plan, err := Plan(hosts, rounds)
		if err != nil {
			t.Fatal(err)
		}
		met := map[string]map[string]bool{}
		perRound := map[int]map[string]bool{}
		for _, m := range plan {
			if perRound[m.Round] == nil {
				perRound[m.Round] = map[string]bool{}
			}
			for _, h := range []string{m.Listen, m.Peer} {
				if perRound[m.Round][h] {
					t.Errorf("n=%d: %s in two pairs of round %d", n, h, m.Round)
				}
				perRound[m.Round][h] = true
			}
			a, b := m.Listen, m.Peer
			for _, x := range [][2]string{{a, b}, {b, a}} {
				if met[x[0]] == nil {
					met[x[0]] = map[string]bool{}
				}
				if met[x[0]][x[1]] {
					t.Errorf("n=%d: %s meets %s twice", n, x[0], x[1])
				}
				met[x[0]][x[1]] = true
			}
		}
		want := min(rounds, n-1+n%2)
		for _, h := range hosts {
			// With an odd count each host sits out one round of n.
			if got := len(met[h]); got < want-n%2 || got > want {
				t.Errorf("n=%d: %s met %d partners, want %d", n, h, got, want)
			}
		}
	}
	if _, err := Plan([]string{"a"}, 3); err == nil {
		t.Error("one host planned")
	}
	if _, err := Plan([]string{"a", "a"}, 3); err == nil {
		t.Error("a host twice planned")
	}
}

func end(local, remote, status, stage string, gbps float64) string {
	return fmt.Sprintf(`{"probe":"pair","status":%q,"stage":%q,"error":"x","role":"connect","local":{"host":%q,"rate_gbps":100},"remote":{"host":%q,"rate_gbps":100},"link_gbps":100,"out":{"gbit_per_s":%g},"in":{"gbit_per_s":%g}}`,
		status, stage, local, remote, gbps, gbps)
}

// Six hosts over three rounds: h3 fails with everyone (a bad node), h1<->h2 fails while both
// pass elsewhere (a bad link), h4<->h5 runs at a tenth of the others (a slow path).
func TestLocalise(t *testing.T) {
	hosts := []string{"h0", "h1", "h2", "h3", "h4", "h5"}
	plan, _ := Plan(hosts, 5)
	var docs []string
	for _, m := range plan {
		status, stage, g := "pass", "done", 90.0
		switch {
		case m.Listen == "h3" || m.Peer == "h3":
			status, stage, g = "fail", "modify_qp_rtr", 0
		case (m.Listen == "h1" && m.Peer == "h2") || (m.Listen == "h2" && m.Peer == "h1"):
			status, stage, g = "fail", "pair_write", 0
		case (m.Listen == "h4" && m.Peer == "h5") || (m.Listen == "h5" && m.Peer == "h4"):
			g = 9
		}
		docs = append(docs, end(m.Peer, m.Listen, status, stage, g), end(m.Listen, m.Peer, status, "pair_peer_write", g))
	}
	docs = append(docs, `{"schema_version":"1.4","summary":{"verdict":"healthy"}}`) // a check report: skipped
	ends, err := Read(strings.NewReader(strings.Join(docs, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	v := Localise(ends, nil)
	if v.Pairs != 15 || len(v.BadHosts) != 1 || v.BadHosts[0].Host != "h3" || len(v.BadHosts[0].Partners) != 5 {
		t.Errorf("bad hosts %+v of %d pairs", v.BadHosts, v.Pairs)
	}
	if len(v.BadLinks) != 1 || v.BadLinks[0].Hosts != "h1 <-> h2" || v.BadLinks[0].Stage != "pair_write" {
		t.Errorf("bad links %+v", v.BadLinks)
	}
	if len(v.SlowPairs) != 1 || v.SlowPairs[0].Hosts != "h4 <-> h5" {
		t.Errorf("slow pairs %+v", v.SlowPairs)
	}
	if len(v.Unclear) != 0 {
		t.Errorf("unclear %+v", v.Unclear)
	}
}

func TestReadRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":       "garbage",
		"no local host":  `{"probe":"pair","status":"pass"}`,
		"negative round": `{"probe":"pair","status":"fail","host":"a","round":-1}`,
		"truncated":      `{"probe":"pair",`,
	} {
		if _, err := Read(strings.NewReader(in), name); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A document that does not end within maxDoc is refused as soon as the reader passes the bound,
// not after buffering what follows: the reader below would give gigabytes.
func TestReadBoundsADocument(t *testing.T) {
	endless := io.MultiReader(strings.NewReader(`{"probe":"pair","error":"`), &repeat{b: 'x'})
	counted := &countReader{r: endless}
	_, err := Read(counted, "big")
	if err == nil || !strings.Contains(err.Error(), "without the document ending") {
		t.Fatalf("err %v", err)
	}
	if counted.n > 4*maxDoc {
		t.Errorf("read %d bytes before refusing", counted.n)
	}
	// Documents of a fleet's size one after another are read whole.
	var b strings.Builder
	for range 3000 {
		b.WriteString(end("a", "b", "pass", "done", 1))
	}
	if ends, err := Read(strings.NewReader(b.String()), "many"); err != nil || len(ends) != 3000 {
		t.Errorf("%d ends, %v", len(ends), err)
	}
}

type repeat struct{ b byte }

func (r *repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b
	}
	return len(p), nil
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func FuzzRead(f *testing.F) {
	f.Add(end("a", "b", "pass", "done", 1))
	f.Add(`{"probe":"pair","local":{"host":""}}`)
	f.Fuzz(func(t *testing.T, s string) {
		ends, _ := Read(strings.NewReader(s), "fuzz")
		Localise(ends, nil)
	})
}

// early is an end that failed before meeting its peer, as the probe writes it: no local or
// remote endpoint, only its own name, its round and, dialling, the address it dialled.
func early(host string, round int, role, peer, stage string) string {
	return fmt.Sprintf(`{"probe":"pair","status":"fail","stage":%q,"error":"x","role":%q,"peer":%q,"host":%q,"round":%d}`, stage, role, peer, host, round)
}

// With its plan, a fleet of six over three rounds: h3's port is down (it fails at query_port
// before any exchange; its partners wait at the side channel and fail there), and in round 2
// the task of one host not paired with h3 never ran (its partner waited in vain; no file from
// it). The plan must put h3's and its partners' early failures on the right pairs, name h3 bad,
// name the missing end, and not call the pair that lacks it a bad link.
func TestLocaliseWithPlan(t *testing.T) {
	hosts := []string{"h0", "h1", "h2", "h3", "h4", "h5"}
	plan, err := Plan(hosts, 3)
	if err != nil {
		t.Fatal(err)
	}
	gone := ""
	for _, m := range plan {
		if m.Round == 2 && m.Listen != "h3" && m.Peer != "h3" {
			gone = m.Listen
			break
		}
	}
	var docs []string
	var goneR2 string
	for _, m := range plan {
		switch {
		case m.Listen == "h3":
			docs = append(docs, early("h3", m.Round, "listen", "0.0.0.0:18515", "query_port"),
				early(m.Peer, m.Round, "connect", "h3:18515", "side_channel"))
		case m.Peer == "h3":
			docs = append(docs, early("h3", m.Round, "connect", m.Listen+":18515", "query_port"),
				early(m.Listen, m.Round, "listen", "0.0.0.0:18515", "side_channel"))
		case m.Round == 2 && m.Listen == gone:
			goneR2 = pairKey(gone, m.Peer)
			docs = append(docs, early(m.Peer, m.Round, "connect", gone+":18515", "side_channel"))
		default:
			docs = append(docs, end(m.Peer, m.Listen, "pass", "done", 90), end(m.Listen, m.Peer, "pass", "done", 90))
		}
	}
	ends, err := Read(strings.NewReader(strings.Join(docs, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	v := Localise(ends, plan)
	if v.Planned != 9 || v.Pairs != 9 {
		t.Errorf("planned %d, judged %d; want 9 and 9", v.Planned, v.Pairs)
	}
	if len(v.BadHosts) != 1 || v.BadHosts[0].Host != "h3" || len(v.BadHosts[0].Partners) != 3 || !slices.Equal(v.BadHosts[0].Stages, []string{"query_port"}) {
		t.Errorf("bad hosts %+v; want h3 at query_port with 3 partners", v.BadHosts)
	}
	if len(v.BadLinks) != 0 {
		t.Errorf("bad links %+v; want none (%s lacks an end)", v.BadLinks, goneR2)
	}
	if len(v.Missing) != 1 || v.Missing[0].Host != gone || v.Missing[0].Round != 2 || v.Missing[0].Alone || pairKey(gone, v.Missing[0].Partner) != goneR2 {
		t.Errorf("missing %+v; want %s in round 2 (%s)", v.Missing, gone, goneR2)
	}
	if len(v.Unclear) != 1 || v.Unclear[0].Hosts != goneR2 {
		t.Errorf("unclear %+v; want %s", v.Unclear, goneR2)
	}
	if len(v.Unplanned) != 0 {
		t.Errorf("unplanned %v", v.Unplanned)
	}
	// Without the plan only the dialling ends' failures name a partner, and the missing end
	// goes unnoticed.
	nv := Localise(ends, nil)
	if len(nv.Missing) != 0 || nv.Planned != 0 {
		t.Errorf("no plan: missing %+v", nv.Missing)
	}
	// Pairs neither end reported (every pass of h0's dropped), and a pair not in the plan.
	extra, _ := Read(strings.NewReader(end("h0", "h9", "pass", "done", 90)), "extra")
	var some []End
	dropped := 0
	for _, e := range ends {
		if e.Status == "pass" && (e.Host == "h0" || e.Remote.Host == "h0") {
			dropped++
			continue
		}
		some = append(some, e)
	}
	v = Localise(append(some, extra...), plan)
	alone := 0
	for _, m := range v.Missing {
		if m.Alone {
			alone++
		}
	}
	if dropped == 0 || alone != dropped || !slices.Equal(v.Unplanned, []string{"h0 <-> h9"}) {
		t.Errorf("%d of h0's passing ends dropped: %d ends alone, unplanned %v; want as many and h0 <-> h9", dropped, alone, v.Unplanned)
	}
}

func TestReadPlan(t *testing.T) {
	plan, _ := Plan([]string{"a", "b", "c", "d"}, 3)
	var text strings.Builder
	for _, m := range plan {
		fmt.Fprintf(&text, "round %d: %s listens, %s dials\n", m.Round, m.Listen, m.Peer)
	}
	js, _ := json.Marshal(plan)
	for name, in := range map[string]string{"text": text.String(), "json": string(js)} {
		got, err := ReadPlan(strings.NewReader(in), name)
		if err != nil || !slices.Equal(got, plan) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, plan)
		}
	}
	for name, in := range map[string]string{
		"empty":              "",
		"not a plan":         "a b\n",
		"no colon":           "round 1 a listens, b dials\n",
		"round 0":            "round 0: a listens, b dials\n",
		"itself":             "round 1: a listens, a dials\n",
		"host twice a round": "round 1: a listens, b dials\nround 1: a listens, c dials\n",
		"pair twice":         "round 1: a listens, b dials\nround 2: b listens, a dials\n",
		"trailing words":     "round 1: a listens, b dials now\n",
		"json unknown field": `[{"round":1,"listen":"a","peer":"b","x":1}]`,
		"json empty host":    `[{"round":1,"listen":"","peer":"b"}]`,
		"json cut short":     `[{"round":1,`,
	} {
		if _, err := ReadPlan(strings.NewReader(in), name); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzReadPlan(f *testing.F) {
	f.Add("round 1: a listens, b dials\nround 2: b listens, c dials\n")
	f.Add(`[{"round":1,"listen":"a","peer":"b"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		plan, err := ReadPlan(strings.NewReader(s), "fuzz")
		if err == nil && len(plan) == 0 {
			t.Fatal("an empty plan accepted")
		}
		ends, _ := Read(strings.NewReader(end("a", "b", "pass", "done", 1)+early("c", 1, "listen", "", "side_channel")), "fuzz")
		Localise(ends, plan)
	})
}
