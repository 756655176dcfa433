package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.kernel_config",
		Description: "Kernel built with RDMA: CONFIG_INFINIBAND, user access, the vendor drivers present",
		Fault:       "kernel-config",
		Run:         runKernelConfig,
	})
}

// kernelConfig reads /proc/config.gz, else /boot/config-<release>. It returns the config, the
// path it came from, and the paths tried when none was found.
func kernelConfig(h *host.Host) (kmod.Config, string, error) {
	b, err := h.ReadFile("/proc/config.gz")
	if err == nil {
		c, err := kmod.ParseConfig(b, true)
		return c, "/proc/config.gz", err
	}
	tried := []string{"/proc/config.gz"}
	rel, rerr := h.ReadString("/proc/sys/kernel/osrelease")
	if rerr != nil {
		if f, ferr := h.Facts(); ferr == nil {
			rel = f.KernelRelease
		}
	}
	if rel != "" {
		p := "/boot/config-" + rel
		if b, err := h.ReadFile(p); err == nil {
			c, err := kmod.ParseConfig(b, false)
			return c, p, err
		}
		tried = append(tried, p)
	}
	return nil, "", fmt.Errorf("%w: %s", fs.ErrNotExist, strings.Join(tried, ", "))
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

func runKernelConfig(_ context.Context, env *checks.Env) ([]report.Finding, error) {
	cfg, src, err := kernelConfig(env.Host)
	subj := report.Subject{Kind: "host", Name: "kernel"}
	if errors.Is(err, fs.ErrNotExist) {
		return []report.Finding{{
			Subject:  subj,
			Severity: report.Skipped,
			Summary:  "kernel build configuration not available (tried " + strings.TrimPrefix(err.Error(), fs.ErrNotExist.Error()+": ") + ")",
			Remediation: "Not a fault. To let rdmadiag check it, load the configs module (modprobe configs) " +
				"or install the kernel's config file in /boot.",
		}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var out []report.Finding
	judge := func(opt, why, fix string, sev report.Severity) {
		v := cfg.State(opt)
		if v == "y" || v == "m" {
			out = append(out, report.Finding{Subject: report.Subject{Kind: "host", Name: opt}, Severity: report.OK,
				Summary:  fmt.Sprintf("%s=%s", opt, v),
				Evidence: []report.Evidence{report.EvExp(opt, v, "y or m", src)}})
			return
		}
		out = append(out, report.Finding{
			Subject:     report.Subject{Kind: "host", Name: opt},
			Severity:    sev,
			Summary:     fmt.Sprintf("%s is not set: %s", opt, why),
			Evidence:    []report.Evidence{report.EvExp(opt, "not set", "y or m", src)},
			Remediation: fix,
		})
	}
	judge("CONFIG_INFINIBAND", "this kernel has no RDMA subsystem, so no RDMA device can ever appear",
		"Boot a kernel built with CONFIG_INFINIBAND=m (every distribution kernel has it; custom and cloud-minimal kernels may not), "+
			"or on Ubuntu install linux-modules-extra-$(uname -r).", report.Critical)
	if cfg.State("CONFIG_INFINIBAND") == "" {
		return out, nil
	}
	judge("CONFIG_INFINIBAND_USER_ACCESS", "no /dev/infiniband/uverbs: user-space verbs (libibverbs, NCCL, MPI, perftest) cannot work",
		"Boot a kernel built with CONFIG_INFINIBAND_USER_ACCESS=m.", report.Critical)
	judge("CONFIG_INFINIBAND_ADDR_TRANS", "no RDMA CM: RoCE and IP-addressed connections (librdmacm, NVMe-oF, SMB Direct) cannot be made",
		"Boot a kernel built with CONFIG_INFINIBAND_ADDR_TRANS=y.", report.Warning)
	if cfg.State("CONFIG_PCIEAER") == "" {
		out = append(out, report.Finding{Subject: report.Subject{Kind: "host", Name: "CONFIG_PCIEAER"}, Severity: report.Info,
			Summary:  "CONFIG_PCIEAER is not set: PCIe errors are not counted (aer_dev_* files are absent), so the PCIe layer cannot see them",
			Evidence: []report.Evidence{report.EvExp("CONFIG_PCIEAER", "not set", "y", src)}})
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
			fmt.Sprintf("Boot a kernel built with %s=m.", opt), report.Critical)
	}
	return out, nil
}
