package pairs

import (
	"fmt"
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
	v := Localise(ends)
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
		"not JSON":      "garbage",
		"no local host": `{"probe":"pair","status":"pass"}`,
		"truncated":     `{"probe":"pair",`,
	} {
		if _, err := Read(strings.NewReader(in), name); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(end("a", "b", "pass", "done", 1))
	f.Add(`{"probe":"pair","local":{"host":""}}`)
	f.Fuzz(func(t *testing.T, s string) {
		ends, _ := Read(strings.NewReader(s), "fuzz")
		Localise(ends)
	})
}
