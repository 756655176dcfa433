package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.kernel_config",
		Description: "Kernel built with RDMA: CONFIG_INFINIBAND, user access, the vendor drivers present",
		Fault:       "kernel-config",
		Run:         runKernelConfig,
	})
}

// sharedKernelConfig is the run's kernel config (observe.KernelConfig).
func sharedKernelConfig(env *checks.Env) (kmod.Config, string, error) {
	r := observe.KernelConfig.Get(env)
	return r.Config, r.Source, r.Err
}

// configModular reports whether a kernel config has loadable-module support: CONFIG_MODULES
// set, or any option at m, which Kconfig allows only when the MODULES symbol is on (the "modules"
// attribute, Documentation/kbuild/kconfig-language.rst); excerpts of a config may lack the
// CONFIG_MODULES line itself.
func configModular(cfg kmod.Config) bool {
	if cfg.State("CONFIG_MODULES") != "" {
		return true
	}
	for _, v := range cfg {
		if v == "m" {
			return true
		}
	}
	return false
}

// vendorOptions maps the driver of an RDMA device (or of its PCI function) to the kernel option
// that builds its RDMA part.
var vendorOptions = map[string]string{
	"mlx5_core": "CONFIG_MLX5_INFINIBAND",
	"mlx4_core": "CONFIG_MLX4_INFINIBAND",
	"irdma":     "CONFIG_INFINIBAND_IRDMA",
	"ice":       "CONFIG_INFINIBAND_IRDMA",
	"i40e":      "CONFIG_INFINIBAND_IRDMA",
	"bnxt_en":   "CONFIG_INFINIBAND_BNXT_RE",
	"efa":       "CONFIG_INFINIBAND_EFA",
	"qede":      "CONFIG_INFINIBAND_QEDR",
	"hfi1":      "CONFIG_INFINIBAND_HFI1",
	"rdma_rxe":  "CONFIG_RDMA_RXE",
	"siw":       "CONFIG_RDMA_SIW",
}

func runKernelConfig(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	cfg, src, err := sharedKernelConfig(env)
	subj := report.Subject{Kind: "host", Name: "kernel"}
	if errors.Is(err, fs.ErrNotExist) {
		return []engine.Finding{{Finding: report.Finding{
			Subject:  subj,
			Severity: report.Skipped,
			Summary:  "kernel build configuration not available (tried " + strings.TrimPrefix(err.Error(), fs.ErrNotExist.Error()+": ") + ")",
			Remediation: "Not a fault. To let rdmadiag check it, load the configs module (modprobe configs) " +
				"or install the kernel's config file in /boot.",
		}}}, nil
	}
	if err != nil {
		return nil, err // names the file
	}
	var out []engine.Finding
	// A kernel without loadable-module support cannot have an option set to m, so its fixes ask
	// for built-in options.
	val, modular := "m", configModular(cfg)
	if !modular {
		val = "y"
	}
	judge := func(opt, why, fix string, sev report.Severity) {
		v := cfg.State(opt)
		if v == "y" || v == "m" {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: opt}, Severity: report.OK,
				Summary:  fmt.Sprintf("%s=%s", opt, v),
				Evidence: []report.Evidence{report.EvExp(opt, v, "y or m", src)}}})
			return
		}
		out = append(out, engine.Finding{Finding: report.Finding{
			Subject:     report.Subject{Kind: "host", Name: opt},
			Severity:    sev,
			Summary:     fmt.Sprintf("%s is not set: %s", opt, why),
			Evidence:    []report.Evidence{report.EvExp(opt, "not set", "y or m", src)},
			Remediation: fix,
		}})
	}
	ibFix := "Boot a kernel built with CONFIG_INFINIBAND=m (every distribution kernel has it; custom and cloud-minimal kernels may not), " +
		"or on Ubuntu install linux-modules-extra-$(uname -r)."
	if !modular {
		ibFix = "Boot a kernel built with CONFIG_INFINIBAND=y: this one has no loadable-module support (CONFIG_MODULES is not set), so no module package can add it."
	}
	judge("CONFIG_INFINIBAND", "this kernel has no RDMA subsystem, so no RDMA device can ever appear", ibFix, report.Critical)
	if cfg.State("CONFIG_INFINIBAND") == "" {
		return out, nil
	}
	judge("CONFIG_INFINIBAND_USER_ACCESS", "no /dev/infiniband/uverbs: user-space verbs (libibverbs, NCCL, MPI, perftest) cannot work",
		"Boot a kernel built with CONFIG_INFINIBAND_USER_ACCESS="+val+".", report.Critical)
	judge("CONFIG_INFINIBAND_ADDR_TRANS", "no RDMA CM: RoCE and IP-addressed connections (librdmacm, NVMe-oF, SMB Direct) cannot be made",
		"Boot a kernel built with CONFIG_INFINIBAND_ADDR_TRANS=y.", report.Warning)
	if cfg.State("CONFIG_PCIEAER") == "" {
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "CONFIG_PCIEAER"}, Severity: report.Info,
			Summary:  "CONFIG_PCIEAER is not set: PCIe errors are not counted (aer_dev_* files are absent), so the PCIe layer cannot see them",
			Evidence: []report.Evidence{report.EvExp("CONFIG_PCIEAER", "not set", "y", src)}}})
	}
	seen := map[string]bool{}
	for _, d := range env.Inventory().Devices {
		drv := d.Driver
		opt, ok := vendorOptions[drv]
		if !ok || seen[opt] {
			continue
		}
		seen[opt] = true
		judge(opt, fmt.Sprintf("the RDMA part of the %s driver is not built, yet %s uses it", drv, d.Name),
			fmt.Sprintf("Boot a kernel built with %s=%s.", opt, val), report.Critical)
	}
	return out, nil
}
