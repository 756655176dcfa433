// Package all registers every layer's checks; the CLI imports it for its side effect.
package all

import (
	_ "github.com/rdmadiag/rdmadiag/checks/cq"       // CQ depth vs concurrency, logged CQ/EQ errors, completion vectors
	_ "github.com/rdmadiag/rdmadiag/checks/driver"   // modules, kernel config, registration, user-space verbs
	_ "github.com/rdmadiag/rdmadiag/checks/firmware" // firmware/driver matrix, drift, fleet policy
	_ "github.com/rdmadiag/rdmadiag/checks/pcie"     // link training, bandwidth budget, AER, DMA path
	_ "github.com/rdmadiag/rdmadiag/checks/port"     // state, rate, addressing, counters
	_ "github.com/rdmadiag/rdmadiag/checks/probes"   // verbs loopback probes, one per layer
	_ "github.com/rdmadiag/rdmadiag/checks/qp"       // QPs in error, exhaustion, stuck QPs (RDMA netlink)
)
