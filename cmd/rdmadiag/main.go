// Command rdmadiag tells whether the RDMA NICs of a Linux host are healthy, and if not, which
// layer is at fault, with the evidence and the fix.
package main

import "github.com/rdmadiag/rdmadiag/cli"

// Build stamps, set by the Makefile with -ldflags "-X main.version=... -X main.commit=...
// -X main.date=...".
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func main() { cli.Main(cli.Build{Version: version, Commit: commit, Date: date}) }
