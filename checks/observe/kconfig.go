package observe

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
)

// KernelConfigResult is the kernel build configuration as the run first read it: the config and
// the path it came from, or why none could be used. Err wraps fs.ErrNotExist with the paths
// tried when there is none; a config that did not parse names its path.
type KernelConfigResult struct {
	Config kmod.Config
	Source string
	Err    error
}

// KernelConfig is the run's kernel config: /proc/config.gz, else /boot/config-<release>.
var KernelConfig = checks.NewFact("kernel config", func(env *checks.Env) KernelConfigResult {
	c, src, err := readKernelConfig(env.Host)
	if err != nil {
		c = nil
	}
	return KernelConfigResult{Config: c, Source: src, Err: err}
})

func readKernelConfig(h *host.Host) (kmod.Config, string, error) {
	const proc = "/proc/config.gz"
	if b, err := h.ReadFile(proc); err == nil {
		c, err := kmod.ParseConfig(b, true)
		if err != nil {
			return nil, proc, fmt.Errorf("%s: %w", proc, err)
		}
		return c, proc, nil
	}
	tried := []string{proc}
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
			if err != nil {
				return nil, p, fmt.Errorf("%s: %w", p, err)
			}
			return c, p, nil
		}
		tried = append(tried, p)
	}
	return nil, "", fmt.Errorf("%w: %s", fs.ErrNotExist, strings.Join(tried, ", "))
}
