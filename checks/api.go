package checks

import (
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// The surface a check consults, named here so that a check written outside this module can name
// what Env gives it. A check is one Check registered in init() (Register); its Run reads the
// host through Env and returns Findings:
//
//   - Env.Host reads the machine: files under its root (ReadFile, ReadString, ReadDir, Readlink,
//     Exists), confined to the host's tree, the same calls live, on a snapshot and on --root.
//   - Env.Inventory is the run's RDMA devices, their ports and PCI functions, read once.
//   - Env.KernelEvents is the run's kernel log classified once into Events, each tied to its
//     device, PCI function, netdev or port; JudgeOf says which check judges an event, so a site
//     check that reads events leaves the ones a built-in check judges alone.
//   - checks/observe holds the host facts several checks share (modules, kernel config,
//     interrupts, AER counters, netdevs), each read once per run: observe.Modules.Get(env).
//   - NewFact declares a value of the check's own that several of its checks share in one run.
//
// The findings are engine.Finding: report.Finding (subject, severity, summary, evidence,
// remediation, fault row) and what only the report engine reads. The runner sets the check id,
// the layer and, where the check left it empty, the fault row; the engine links causes from the
// fault table (report/engine/faults.json), so a check states what it saw and names no other
// check's finding.
type (
	// Host is the machine a run judges: a live host, a snapshot or a --root tree.
	Host = host.Host
	// Inventory is the run's RDMA devices (Devices) and those left out by the operator.
	Inventory = inventory.Inventory
	// Device is one RDMA device: name, driver, PCI function, node GUID, firmware and ports.
	Device = inventory.Device
	// Port is one port of a Device: its number, link layer, netdev and sysfs directory; its
	// state and rate are read at check time (Port.ReadState, Port.ReadRate).
	Port = inventory.Port
	// Event is one kernel log record, classified: the signature it matched (or none, for an
	// error line of a known driver that no signature knows) and what it is about.
	Event = kevent.Event
	// Finding is what a check returns.
	Finding = engine.Finding
)
