package driver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// A module that fails to load for a symbol it cannot resolve ("Unknown symbol", "disagrees
// about version of symbol", kernel/module/main.c and version.c) takes the devices away only when
// it is part of the RDMA stack itself: the core (ib_core and the modules every RDMA program
// goes through), a NIC's driver or its RDMA module. A consumer of ib_core built for another
// stack (the SMB server, Lustre's LNet, NVMe or NFS over RDMA from a vendor package) loses its
// own RDMA transport and nothing else: a warning that names it and how to rebuild it.

// stackModules are the RDMA stack's own modules (drivers/infiniband/core/Makefile; the
// providers of drivers/infiniband/hw and sw; the NIC drivers they bind to; mlx_compat, the
// compatibility layer every MLNX_OFED module links against).
var stackModules = map[string]string{
	"ib_core": "the RDMA core", "ib_uverbs": "the RDMA core", "ib_umad": "the RDMA core", "ib_cm": "the RDMA core",
	"iw_cm": "the RDMA core", "rdma_cm": "the RDMA core", "rdma_ucm": "the RDMA core", "mlx_compat": "the MLNX_OFED compatibility layer",
	"mlx4_en": "a NIC driver", "hns3": "a NIC driver", "efa": "an RDMA driver", "rdma_rxe": "an RDMA driver", "siw": "an RDMA driver",
	"hns_roce_hw_v2": "an RDMA driver", "erdma": "an RDMA driver", "mana_ib": "an RDMA driver", "vmw_pvrdma": "an RDMA driver",
	"iw_cxgb4": "an RDMA driver", "ocrdma": "an RDMA driver", "mlxfw": "a NIC driver",
}

func init() {
	for core, ib := range vendorPairs {
		stackModules[core] = "a NIC driver"
		stackModules[ib] = "an RDMA driver"
	}
}

// consumers names what a known ib_core consumer serves, and how it is usually built for another
// stack: the fix names that way of rebuilding it.
var consumers = map[string]struct{ what, rebuild string }{
	"ksmbd":               {"the in-kernel SMB server's SMB Direct transport", "the ksmbd out-of-tree build (make; make install) or its DKMS package"},
	"ko2iblnd":            {"Lustre's LNet o2ib network driver", "the Lustre client or server packages (lustre-client-modules, kmod-lustre-client), configured --with-o2ib=/usr/src/ofa_kernel/default for MLNX_OFED"},
	"nvme_rdma":           {"the NVMe over RDMA host driver", "MLNX_OFED's own (./mlnxofedinstall --with-nvmf) or the distribution's"},
	"nvmet_rdma":          {"the NVMe over RDMA target driver", "MLNX_OFED's own (./mlnxofedinstall --with-nvmf) or the distribution's"},
	"rpcrdma":             {"NFS over RDMA", "MLNX_OFED's (--with-nfsrdma) or the distribution's"},
	"xprtrdma":            {"NFS over RDMA", "MLNX_OFED's (--with-nfsrdma) or the distribution's"},
	"svcrdma":             {"NFS over RDMA", "MLNX_OFED's (--with-nfsrdma) or the distribution's"},
	"ib_srp":              {"the SRP initiator", "MLNX_OFED's or the distribution's"},
	"ib_srpt":             {"the SRP target", "MLNX_OFED's or the distribution's"},
	"ib_iser":             {"iSCSI over RDMA (iSER)", "MLNX_OFED's or the distribution's"},
	"ib_isert":            {"the iSER target", "MLNX_OFED's or the distribution's"},
	"ib_ipoib":            {"IP over InfiniBand", "MLNX_OFED's or the distribution's"},
	"rds_rdma":            {"RDS over RDMA", "the distribution's"},
	"drbd_transport_rdma": {"DRBD's RDMA transport", "the drbd DKMS package, built against the running stack's headers"},
	"nv_peer_mem":         {"GPUDirect RDMA (the legacy peer-memory client)", "the nvidia-peer-memory DKMS package, or nvidia-peermem from the GPU driver"},
	"nvidia_peermem":      {"GPUDirect RDMA (nvidia-peermem)", "the NVIDIA driver's package, installed after MLNX_OFED so that it is built against it"},
}

// rdmaSymbol says whether a symbol is one of ib_core's family's exports (ib_*, rdma_*, iw_*,
// ibdev_*, the peer-memory client API of MLNX_OFED): a module that disagrees about it was built
// against another RDMA stack.
func rdmaSymbol(sym string) bool {
	sym = strings.TrimLeft(sym, "_")
	for _, p := range []string{"ib_", "rdma_", "iw_", "ibdev_", "uverbs_", "uapi_"} {
		if strings.HasPrefix(sym, p) {
			return true
		}
	}
	return false
}

// runningStack names the RDMA stack this kernel runs, from the module list: MLNX_OFED/DOCA-OFED
// when ib_core is out of tree (taint O) or mlx_compat is loaded (mlnx-ofa_kernel builds both),
// else the kernel's own; "" when the list could not be read.
func runningStack(env *checks.Env) string {
	p := sharedPresence(env)
	if p.list != listRead {
		return ""
	}
	if m, ok := p.mods["ib_core"]; ok && strings.Contains(m.Taints, "O") || p.mods.Has("mlx_compat") {
		return "MLNX_OFED/DOCA-OFED, ib_core out of tree"
	}
	if _, ok := p.mods["ib_core"]; ok {
		return "the kernel's own, ib_core in-box"
	}
	return ""
}

// outsideTheStack is the observation (report/engine/faults.json) of a failed load of a module that is not
// part of the RDMA stack: it costs that module alone, so it explains no other finding.
const outsideTheStack = "outside-the-stack"

// moduleLoadFailure grades a module's failed load: critical for the RDMA stack's own modules,
// a warning naming the stack mismatch and its rebuild for a consumer of ib_core.
func moduleLoadFailure(env *checks.Env, f engine.Finding, g *logGroup) engine.Finding {
	name := g.module
	var syms, rdma []string
	// The loader's lines name the module, then the symbol (kevent core.json module-load).
	for _, ev := range g.evs {
		if len(ev.Args) < 2 {
			continue
		}
		if sym := ev.Args[1]; !slices.Contains(syms, sym) {
			syms = append(syms, sym)
			if rdmaSymbol(sym) {
				rdma = append(rdma, sym)
			}
		}
	}
	stack := runningStack(env)
	if stack != "" {
		f.Evidence = append(f.Evidence, report.Ev("running RDMA stack", stack, procModules+" (ib_core's taint, mlx_compat)"))
	}
	if role, ok := stackModules[name]; ok {
		f.Severity = report.Critical
		f.Summary = strings.Replace(f.Summary, "("+name+")", "("+name+", "+role+")", 1)
		return f
	}
	if len(rdma) == 0 {
		// Not an RDMA symbol: the module misses another module's export (a GPU driver's, a
		// kernel's). It still is not the RDMA stack.
		f.Severity = report.Warning
		f.Observation = outsideTheStack
		return f
	}
	what, rebuild := "a consumer of ib_core", "its package or DKMS module"
	if c, ok := consumers[name]; ok {
		what, rebuild = c.what, c.rebuild
	}
	against := "another RDMA stack than the one running"
	if stack != "" {
		against += " (" + stack + ")"
	}
	f.Severity = report.Warning
	// A consumer's failure costs its own transport, not the devices: it explains nothing else
	// (the fault table's observation).
	f.Observation = outsideTheStack
	f.Summary = fmt.Sprintf("%s: %s cannot load: it was built against %s (%d RDMA symbol(s) it cannot resolve: %s); only it is lost, the RDMA devices are not affected",
		name, what, against, len(rdma), strings.Join(firstN(rdma, 4), ", "))
	f.Remediation = fmt.Sprintf("Rebuild or reinstall %s for the running RDMA stack: %s; with MLNX_OFED/DOCA-OFED build it against its headers "+
		"(DKMS with /usr/src/ofa_kernel/default, or the vendor's package built for that MLNX_OFED release), with the in-box stack against the kernel's; then depmod -a and modprobe %s.",
		name, rebuild, name)
	f.Evidence = append(f.Evidence, report.Ev("unresolved RDMA symbols", strings.Join(rdma, ", "), klogCite(env)))
	return f
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func klogCite(env *checks.Env) string {
	if l, err := env.KernelLog(); err == nil {
		return l.Cite
	}
	return "kmsg"
}
