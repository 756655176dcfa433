// Command sitecheck is rdmadiag with one check of a site's own: every RoCE port's netdev runs the
// site's MTU. It is the whole of what a site writes to add a Go check: register it in init() and
// call cli.Main; the binary has every built-in check, command and output, and `sitecheck list`
// names this check with its origin.
//
//	go build -o rdmadiag-site ./examples/sitecheck
//	./rdmadiag-site check --only port.site_mtu
package main

import (
	"context"
	"fmt"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all" // every built-in check
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/cli"
	"github.com/rdmadiag/rdmadiag/report"
)

// siteMTU is this site's rule, not a standard: its switches and hosts carry 9000-byte frames end
// to end, so a RoCE netdev at any other MTU was configured by hand or missed by provisioning.
const siteMTU = 9000

func init() {
	checks.Register(checks.Check{
		ID:          "port.site_mtu",
		Description: fmt.Sprintf("RoCE netdevs run the site's MTU (%d)", siteMTU),
		// A row of report/engine/faults.json: the report links and orders it with the port
		// findings of the built-in checks.
		Fault: "port-link",
		Run:   runSiteMTU,
	})
}

func runSiteMTU(_ context.Context, env *checks.Env) ([]checks.Finding, error) {
	var out []checks.Finding
	for _, d := range env.Inventory().Devices {
		for _, p := range d.Ports {
			if p.LinkLayer != "Ethernet" {
				continue
			}
			for _, nd := range p.Netdevs {
				out = append(out, judgeMTU(d, p, observe.Netdev(env, nd)))
			}
		}
	}
	return out, nil
}

func judgeMTU(d *checks.Device, p *checks.Port, nd observe.NetdevAttrs) checks.Finding {
	subj := report.Subject{Kind: "port", Name: fmt.Sprintf("%s/%d", d.Name, p.Num), Device: d.Name}
	if d.PCI != nil {
		subj.PCI = d.PCI.BDF
	}
	f := checks.Finding{Finding: report.Finding{Subject: subj}}
	switch {
	case nd.MTUErr != nil:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s: MTU unreadable: %v", nd.Name, nd.MTUErr)
	case nd.MTU == siteMTU:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s MTU %d, the site's", nd.Name, nd.MTU)
	default:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s MTU %d, the site runs %d", nd.Name, nd.MTU, siteMTU)
		f.Remediation = fmt.Sprintf("Set the MTU in the host's network configuration (ip link set %s mtu %d to try it now).", nd.Name, siteMTU)
		// The fault row's default action (the cable) does not fit a setting.
		f.Action = report.ActionFixConfiguration
	}
	f.Evidence = []report.Evidence{report.Ev("mtu", fmt.Sprint(nd.MTU), nd.Dir+"/mtu")}
	return f
}

func main() { cli.Main(cli.Build{}) }
