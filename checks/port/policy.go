package port

import (
	"fmt"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
)

// portsPolicy is the "ports" section of --policy (decoded before the run); nil without one.
// expect_rate_gbps is the rate every active port must reach; by_board_id overrides it for the
// ports of boards with that PSID; link_layer is what every port must run.
func portsPolicy(o checks.Options) *optfile.PortsPolicy {
	if o.Policy == nil {
		return nil
	}
	return o.Policy.Ports
}

// expectation is the rate a port must reach and where that came from.
type expectation struct {
	gbps   float64
	source string
}

// expectedRate picks the rate a port of a board must reach: --expect-rate, else the policy's
// rate for the board's PSID, else the policy's rate for every port; zero means none.
func expectedRate(opts checks.Options, p *optfile.PortsPolicy, boardID string) expectation {
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
