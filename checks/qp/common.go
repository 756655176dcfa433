package qp

import (
	"fmt"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func devSubject(env *checks.Env, dev string) report.Subject { return rdmares.DevSubject(env, dev) }

func netlinkUnavailable(env *checks.Env, err error) []engine.Finding {
	return rdmares.Unavailable(env, err)
}

func noDevices() []engine.Finding { return rdmares.NoDevices() }

func pct(n, of int64) string {
	return fmt.Sprintf("%.1f%%", float64(n)*100/float64(of))
}
