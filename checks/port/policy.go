package port

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
)

// Policy is the port part of the fleet policy file (--policy). The file is shared with other
// layers (checks/firmware reads "firmware"), so only its "ports" object is read here, strictly:
//
//	{"ports": {"expect_rate_gbps": 400, "by_board_id": {"MT_0000000838": 400}, "link_layer": "InfiniBand"}}
//
// expect_rate_gbps is the rate every active port must reach; by_board_id overrides it for the
// ports of boards with that PSID (a host with 400G compute and 200G storage NICs); link_layer
// is what every port must run. --expect-rate on the command line wins over both rates.
type Policy struct {
	ExpectRateGbps float64            `json:"expect_rate_gbps"`
	ByBoardID      map[string]float64 `json:"by_board_id"`
	LinkLayer      string             `json:"link_layer"`
}

// maxRateGbps bounds a believable port rate: 12X XDR is 2400 Gb/s; ten times that is a typo
// (Mb/s given for Gb/s), not a plan.
const maxRateGbps = 24000

// ParsePolicy reads the policy document; a file without a "ports" object gives nil. Unknown keys
// in "ports" are refused, so that a misspelt expectation never silently checks nothing.
func ParsePolicy(b []byte, from string) (*Policy, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	raw, ok := doc["ports"]
	if !ok {
		return nil, nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: ports: %s", from, fmt.Sprintf(format, a...))
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, bad("want an object like {\"expect_rate_gbps\": 400}, got %s", truncate(string(t), 40))
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, bad("%v (known keys: expect_rate_gbps, by_board_id, link_layer)", err)
	}
	okRate := func(v float64) bool { return v > 0 && v <= maxRateGbps && !math.IsNaN(v) }
	if p.ExpectRateGbps != 0 && !okRate(p.ExpectRateGbps) {
		return nil, bad("expect_rate_gbps %g is not a port rate in Gb/s (0 < rate <= %d)", p.ExpectRateGbps, maxRateGbps)
	}
	for id, v := range p.ByBoardID {
		if strings.TrimSpace(id) == "" {
			return nil, bad("by_board_id has an empty board id")
		}
		if !okRate(v) {
			return nil, bad("by_board_id[%q] %g is not a port rate in Gb/s (0 < rate <= %d)", id, v, maxRateGbps)
		}
	}
	switch strings.ToLower(p.LinkLayer) {
	case "":
	case "infiniband":
		p.LinkLayer = "InfiniBand"
	case "ethernet":
		p.LinkLayer = "Ethernet"
	default:
		return nil, bad("link_layer %q is neither InfiniBand nor Ethernet", p.LinkLayer)
	}
	return &p, nil
}

// expectation is the rate a port must reach and where that came from.
type expectation struct {
	gbps   float64
	source string
}

// expectedRate picks the rate a port of a board must reach: --expect-rate, else the policy's
// rate for the board's PSID, else the policy's rate for every port; zero means none.
func expectedRate(opts checks.Options, p *Policy, boardID string) expectation {
	if opts.ExpectRate > 0 {
		return expectation{opts.ExpectRate, "--expect-rate"}
	}
	if p == nil {
		return expectation{}
	}
	if v, ok := p.ByBoardID[boardID]; ok && boardID != "" {
		return expectation{v, fmt.Sprintf("policy %s ports.by_board_id[%s]", opts.PolicyFile, boardID)}
	}
	if p.ExpectRateGbps > 0 {
		return expectation{p.ExpectRateGbps, "policy " + opts.PolicyFile + " ports.expect_rate_gbps"}
	}
	return expectation{}
}

type policyResult struct {
	p   *Policy
	err error
}

// loadPolicy reads --policy once per run for all port checks. The file is the analyst's, not the
// analysed host's, so it is read from this machine, as checks/firmware does.
func loadPolicy(env *checks.Env) (*Policy, error) {
	file := env.Opts.PolicyFile
	if file == "" {
		return nil, nil
	}
	r := env.Memo("port.policy", func() any {
		b, err := os.ReadFile(file)
		if err != nil {
			return policyResult{err: fmt.Errorf("--policy: %w", err)}
		}
		p, err := ParsePolicy(b, file)
		if err != nil {
			return policyResult{err: fmt.Errorf("--policy: %w", err)}
		}
		return policyResult{p: p}
	}).(policyResult)
	return r.p, r.err
}
