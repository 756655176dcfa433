// Package pairs plans the pair probes of a fleet (which host meets which, round by round) and
// reads their results back to say where a fault sits: a host that fails with every partner is
// the bad one (its card, cable or switch port), a pair that fails while both ends pass with
// others is a bad link or path between them (a switch port, an ISL, a route), and a pair much
// slower than the fleet's other pairs at the same link rate is a degraded path.
package pairs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/report/words"
)

// Match is one pair of a round: Listen runs `probe --listen`, Peer `probe --peer Listen`.
type Match struct {
	Round  int    `json:"round"`
	Listen string `json:"listen"`
	Peer   string `json:"peer"`
}

// Plan pairs hosts for rounds rounds with the circle method of round-robin tournaments: each
// round is a perfect matching (every host in one pair at most, so no pair shares a host's port
// with another), and no two rounds repeat a pair, so after k rounds every host has met k
// different partners. With an odd number of hosts one sits out each round, a different one
// each time. Rounds beyond n-1 (every pair met) are not planned.
func Plan(hosts []string, rounds int) ([]Match, error) {
	seen := map[string]bool{}
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, " \t\n") {
			return nil, fmt.Errorf("host name %q: empty or with blanks", h)
		}
		if seen[h] {
			return nil, fmt.Errorf("host %s listed twice", h)
		}
		seen[h] = true
	}
	if len(hosts) < 2 {
		return nil, errors.New("a plan needs at least two hosts")
	}
	ring := slices.Clone(hosts)
	if len(ring)%2 == 1 {
		ring = append(ring, "") // the bye
	}
	n := len(ring)
	rounds = min(rounds, n-1)
	var out []Match
	for r := 0; r < rounds; r++ {
		for i := 0; i < n/2; i++ {
			a, b := ring[i], ring[n-1-i]
			if a == "" || b == "" {
				continue
			}
			// Alternate who listens, so that each host dials in some rounds and listens in others.
			if (r+i)%2 == 1 {
				a, b = b, a
			}
			out = append(out, Match{Round: r + 1, Listen: a, Peer: b})
		}
		// Rotate all but the first.
		last := ring[n-1]
		copy(ring[2:], ring[1:n-1])
		ring[1] = last
	}
	return out, nil
}

// Role is what host does in round: "listen", "peer HOST" or "idle".
func Role(plan []Match, host string, round int) string {
	for _, m := range plan {
		if m.Round != round {
			continue
		}
		switch host {
		case m.Listen:
			return "listen"
		case m.Peer:
			return "peer " + m.Listen
		}
	}
	return "idle"
}

// End is what one end of a pair probe reported (the part of `rdmadiag probe --format json` read
// here).
type End struct {
	Probe  string `json:"probe"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Error  string `json:"error"`
	Role   string `json:"role"`
	// Peer is the address dialled (connect) or the listener's; Host and Round are this end's
	// name and plan round, present even when the end failed before meeting its peer.
	Peer  string `json:"peer"`
	Host  string `json:"host"`
	Round int    `json:"round"`
	Local *struct {
		Host     string  `json:"host"`
		RateGbps float64 `json:"rate_gbps"`
	} `json:"local"`
	Remote *struct {
		Host     string  `json:"host"`
		RateGbps float64 `json:"rate_gbps"`
	} `json:"remote"`
	LinkGbps float64 `json:"link_gbps"`
	Out      *struct {
		Gbps float64 `json:"gbit_per_s"`
	} `json:"out"`
	In *struct {
		Gbps float64 `json:"gbit_per_s"`
	} `json:"in"`
}

// maxDoc bounds one result document, maxFile what one reader gives (a directory's file).
const (
	maxDoc  = 1 << 20
	maxFile = 64 << 20
)

// errLargeDoc is docLimit's: a document has run past maxDoc without ending.
var errLargeDoc = fmt.Errorf("more than %d bytes without the document ending, more than a pair result has", maxDoc)

// docLimit stops a reader once the document being decoded (from mark, the decoder's offset
// when it began) has taken maxDoc and the decoder's read-ahead: the decoder buffers a whole
// value, so the bound has to be where it reads.
type docLimit struct {
	r       io.Reader
	n, mark int64
}

func (l *docLimit) Read(p []byte) (int, error) {
	const slack = 64 << 10
	if l.n-l.mark > maxDoc+slack {
		return 0, errLargeDoc
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// Read decodes every pair result in r (one JSON document after another, as files concatenated
// or a directory's files read in turn); name says where they came from in errors. Documents of
// other kinds (a check report) are skipped; a document that is not JSON is an error.
func Read(r io.Reader, name string) ([]End, error) {
	lim := &docLimit{r: io.LimitReader(r, maxFile)}
	dec := json.NewDecoder(lim)
	var out []End
	for i := 1; ; i++ {
		lim.mark = dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(raw) > maxDoc {
			return out, fmt.Errorf("%s: document %d: %d bytes, more than a pair result has", name, i, len(raw))
		}
		var e End
		if err := json.Unmarshal(raw, &e); err != nil {
			if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
				continue // another kind of document
			}
			return out, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if e.Probe != "pair" {
			continue
		}
		if e.Host == "" && e.Local != nil {
			e.Host = e.Local.Host
		}
		if e.Host == "" {
			return out, fmt.Errorf("%s: document %d: a pair result without this end's host (host or local.host)", name, i)
		}
		if e.Round < 0 {
			return out, fmt.Errorf("%s: document %d: round %d", name, i, e.Round)
		}
		out = append(out, e)
	}
}

// Pair is one pair's outcome, both ends' reports combined.
type Pair struct {
	A, B    string  `json:"-"`
	Hosts   string  `json:"hosts"` // "a <-> b", sorted
	OK      bool    `json:"ok"`
	Stage   string  `json:"stage,omitempty"`
	Error   string  `json:"error,omitempty"`
	Gbps    float64 `json:"gbit_per_s"` // the slower direction
	Link    float64 `json:"link_gbps"`
	Reports int     `json:"reports"` // 1 when one end's report is missing
	from    map[string]bool
}

// roundHost is one host's place in one round of a plan.
type roundHost struct {
	round int
	host  string
}

func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + " <-> " + b
}

// partner is who e met or was to meet: the peer's own name once the exchange got that far, else
// the plan's partner of e's host in e's round, else, for a dialling end, the host it dialled
// (the recipes dial the names the plan uses).
func partner(e End, planned map[roundHost]string) string {
	if e.Remote != nil && e.Remote.Host != "" {
		return e.Remote.Host
	}
	if p, ok := planned[roundHost{e.Round, e.Host}]; ok {
		return p
	}
	if e.Role == "connect" {
		if h, _, err := net.SplitHostPort(e.Peer); err == nil {
			return h
		}
	}
	return ""
}

// Verdict is where the faults of a fleet's pair probes sit.
type Verdict struct {
	Pairs     int       `json:"pairs"`
	Failed    int       `json:"failed"`
	BadHosts  []BadHost `json:"bad_hosts"`
	BadLinks  []Pair    `json:"bad_links"`
	SlowPairs []Pair    `json:"slow_pairs"`
	Unclear   []Pair    `json:"unclear"` // failed pairs whose ends met no other partner
	// Unreadable are the result files that could not be read, each with why (the reader
	// fills it in: Localise judges what was read).
	Unreadable []string             `json:"unreadable,omitempty"`
	Hosts      map[string]HostTally `json:"hosts"`
	// With a plan: how many pairs it holds, its ends that sent no result, and pairs judged that
	// it does not hold (results of another run in the same directory, a mistyped --name).
	Planned   int          `json:"planned,omitempty"`
	Missing   []MissingEnd `json:"missing,omitempty"`
	Unplanned []string     `json:"unplanned,omitempty"`
}

// MissingEnd is a planned end without a result: its task did not run, died before writing, or
// wrote elsewhere. Alone is set when its partner sent none either (the pair was not probed).
type MissingEnd struct {
	Round   int    `json:"round"`
	Host    string `json:"host"`
	Partner string `json:"partner"`
	Alone   bool   `json:"partner_missing_too,omitempty"`
}

// BadHost is a host that failed with every partner it met.
type BadHost struct {
	Host     string   `json:"host"`
	Partners []string `json:"partners"`
	Stages   []string `json:"stages"`
}

// HostTally is one host's pairs.
type HostTally struct {
	Partners int `json:"partners"`
	Failed   int `json:"failed"`
}

// slowShare is how far below its peers a pair may fall before it is named: half the fleet's
// median at the same link rate. ib_write_bw between healthy ports of one rate lands within a few
// per cent of each other; half is far outside that spread and inside what a degraded link (a
// lane down, a port renegotiated to a lower rate, a congested ISL) costs.
const slowShare = 0.5

// Localise combines the ends' reports into pairs and names bad hosts, bad links and slow pairs.
// With a plan (nil: none), an end that failed before meeting its peer is held against the pair
// the plan gave it, and every planned end that sent no result is named in Missing.
func Localise(ends []End, plan []Match) Verdict {
	planned := map[roundHost]string{}
	for _, m := range plan {
		planned[roundHost{m.Round, m.Listen}] = m.Peer
		planned[roundHost{m.Round, m.Peer}] = m.Listen
	}
	pairs := map[string]*Pair{}
	var keys []string
	for _, e := range ends {
		a, b := e.Host, partner(e, planned)
		if b == "" || b == a {
			// An end that failed before the exchange, run outside a plan, names no peer.
			continue
		}
		k := pairKey(a, b)
		p := pairs[k]
		if p == nil {
			x, y := a, b
			if y < x {
				x, y = y, x
			}
			p = &Pair{A: x, B: y, Hosts: k, OK: true, from: map[string]bool{}}
			pairs[k] = p
			keys = append(keys, k)
		}
		p.Reports++
		p.from[a] = true
		if e.Status != "pass" {
			// The stage to show is the end that saw the cause: not the one told by its peer
			// (pair_peer_write) or the one left waiting for a peer that never came.
			if p.OK || p.Stage == "pair_peer_write" || p.Stage == "side_channel" {
				p.Stage, p.Error = e.Stage, e.Error
			}
			p.OK = false
		}
		for _, d := range []*struct {
			Gbps float64 `json:"gbit_per_s"`
		}{e.Out, e.In} {
			if d != nil && d.Gbps > 0 && (p.Gbps == 0 || d.Gbps < p.Gbps) {
				p.Gbps = d.Gbps
			}
		}
		if e.LinkGbps > 0 {
			p.Link = e.LinkGbps
		}
	}
	sort.Strings(keys)
	v := Verdict{Hosts: map[string]HostTally{}, BadHosts: []BadHost{}, BadLinks: []Pair{}, SlowPairs: []Pair{}, Unclear: []Pair{}}
	partners := map[string][]*Pair{}
	for _, k := range keys {
		p := pairs[k]
		v.Pairs++
		if !p.OK {
			v.Failed++
		}
		partners[p.A] = append(partners[p.A], p)
		partners[p.B] = append(partners[p.B], p)
	}
	bad := map[string]bool{}
	var hosts []string
	for h := range partners {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		ps := partners[h]
		t := HostTally{Partners: len(ps)}
		for _, p := range ps {
			if !p.OK {
				t.Failed++
			}
		}
		v.Hosts[h] = t
		// Failing with one partner says nothing of which end is bad; with every one of at least
		// two partners (who do not all fail elsewhere) the host is the common factor.
		if t.Partners >= 2 && t.Failed == t.Partners {
			bh := BadHost{Host: h}
			for _, p := range ps {
				bh.Partners = append(bh.Partners, other(p, h))
				if !slices.Contains(bh.Stages, p.Stage) {
					bh.Stages = append(bh.Stages, p.Stage)
				}
			}
			v.BadHosts = append(v.BadHosts, bh)
			bad[h] = true
		}
	}
	for _, k := range keys {
		p := pairs[k]
		if p.OK || bad[p.A] || bad[p.B] {
			continue
		}
		// A planned end that sent nothing leaves the pair unjudged: its partner's failure (a
		// peer that never came) is the missing end's, which Missing names.
		if plan != nil && (!p.from[p.A] || !p.from[p.B]) {
			v.Unclear = append(v.Unclear, *p)
			continue
		}
		// Both ends pass with someone else: the fault is between them.
		if passesElsewhere(partners[p.A], p) && passesElsewhere(partners[p.B], p) {
			v.BadLinks = append(v.BadLinks, *p)
		} else {
			v.Unclear = append(v.Unclear, *p)
		}
	}
	// Slow pairs, against the median of passing pairs at the same link rate.
	byLink := map[float64][]float64{}
	for _, k := range keys {
		if p := pairs[k]; p.OK && p.Gbps > 0 {
			byLink[p.Link] = append(byLink[p.Link], p.Gbps)
		}
	}
	for _, k := range keys {
		p := pairs[k]
		g := byLink[p.Link]
		if !p.OK || p.Gbps == 0 || len(g) < 3 {
			continue
		}
		s := slices.Clone(g)
		slices.Sort(s)
		if med := s[len(s)/2]; p.Gbps < slowShare*med {
			v.SlowPairs = append(v.SlowPairs, *p)
		}
	}
	if plan != nil {
		v.Planned = len(plan)
		inPlan := map[string]bool{}
		for _, m := range plan {
			k := pairKey(m.Listen, m.Peer)
			inPlan[k] = true
			p := pairs[k]
			for _, h := range []string{m.Listen, m.Peer} {
				if p == nil || !p.from[h] {
					v.Missing = append(v.Missing, MissingEnd{Round: m.Round, Host: h, Partner: other(&Pair{A: m.Listen, B: m.Peer}, h), Alone: p == nil})
				}
			}
		}
		for _, k := range keys {
			if !inPlan[k] {
				v.Unplanned = append(v.Unplanned, k)
			}
		}
	}
	return v
}

func other(p *Pair, h string) string {
	if p.A == h {
		return p.B
	}
	return p.A
}

func passesElsewhere(ps []*Pair, not *Pair) bool {
	for _, p := range ps {
		if p != not && p.OK {
			return true
		}
	}
	return false
}

// maxPlan bounds a plan file: a line per pair, a million pairs is far past any fabric.
const maxPlan = 64 << 20

// ReadPlan reads a plan as `rdmadiag probe plan` writes it: its text ("round N: A listens, B
// dials", a line per pair) or its --format json (an array of matches). A plan in which a host
// is in two pairs of one round, or a pair is planned twice, is not one probe plan wrote.
func ReadPlan(r io.Reader, name string) ([]Match, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPlan+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxPlan {
		return nil, fmt.Errorf("%s: more than %d MiB, not a plan", name, maxPlan>>20)
	}
	var plan []Match
	if t := bytes.TrimSpace(b); bytes.HasPrefix(t, []byte("[")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&plan); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	} else {
		for i, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			// Host names hold no blanks (Plan refuses them): six fields, exactly.
			f := strings.Fields(l)
			r, err := strconv.Atoi(strings.TrimSuffix(f0(f, 1), ":"))
			if len(f) != 6 || f[0] != "round" || !strings.HasSuffix(f[1], ":") || err != nil || f[3] != "listens," || f[5] != "dials" {
				return nil, fmt.Errorf("%s: line %d: %q is not \"round N: HOST listens, HOST dials\"", name, i+1, words.Truncate(l, 120))
			}
			m := Match{Round: r, Listen: f[2], Peer: f[4]}
			plan = append(plan, m)
		}
	}
	seen := map[roundHost]bool{}
	pairsSeen := map[string]bool{}
	for _, m := range plan {
		if m.Round < 1 || m.Listen == "" || m.Peer == "" || m.Listen == m.Peer {
			return nil, fmt.Errorf("%s: round %d: %q and %q are not a pair of a round", name, m.Round, m.Listen, m.Peer)
		}
		for _, h := range []string{m.Listen, m.Peer} {
			if seen[roundHost{m.Round, h}] {
				return nil, fmt.Errorf("%s: round %d: %s is in two pairs", name, m.Round, h)
			}
			seen[roundHost{m.Round, h}] = true
		}
		k := pairKey(m.Listen, m.Peer)
		if pairsSeen[k] {
			return nil, fmt.Errorf("%s: %s planned twice", name, k)
		}
		pairsSeen[k] = true
	}
	if len(plan) == 0 {
		return nil, fmt.Errorf("%s: no pair in the plan", name)
	}
	return plan, nil
}

// f0 is f[i], or "" past its end.
func f0(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}
