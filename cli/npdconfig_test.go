package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
)

const npdConfigFile = "../deploy/npd/rdmadiag-plugin-monitor.json"

// The custom plugin monitor as node-problem-detector declares it (kubernetes/node-problem-detector
// at 6632ca67: pkg/custompluginmonitor/types/config.go CustomPluginConfig and pluginGlobalConfig,
// types.go CustomRule, pkg/types/types.go Condition), field names and JSON keys as there; the
// duration fields npd derives (`json:"-"`) are left out.
type npdCustomPluginConfig struct {
	Plugin                 string                `json:"plugin,omitempty"`
	PluginGlobalConfig     npdPluginGlobalConfig `json:"pluginConfig,omitempty"`
	Source                 string                `json:"source"`
	DefaultConditions      []npdCondition        `json:"conditions"`
	Rules                  []*npdCustomRule      `json:"rules"`
	EnableMetricsReporting *bool                 `json:"metricsReporting,omitempty"`
}

type npdPluginGlobalConfig struct {
	InvokeIntervalString                    *string `json:"invoke_interval,omitempty"`
	TimeoutString                           *string `json:"timeout,omitempty"`
	MaxOutputLength                         *int    `json:"max_output_length,omitempty"`
	Concurrency                             *int    `json:"concurrency,omitempty"`
	EnableMessageChangeBasedConditionUpdate *bool   `json:"enable_message_change_based_condition_update,omitempty"`
	SkipInitialStatus                       *bool   `json:"skip_initial_status,omitempty"`
}

type npdCondition struct {
	Type       string    `json:"type"`
	Status     string    `json:"status"`
	Transition time.Time `json:"transition"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
}

type npdCustomRule struct {
	Type                 string   `json:"type"`
	Condition            string   `json:"condition"`
	Reason               string   `json:"reason"`
	Path                 string   `json:"path"`
	Args                 []string `json:"args"`
	TimeoutString        *string  `json:"timeout"`
	InvokeIntervalString *string  `json:"invoke_interval,omitempty"`
}

// npdDuration parses a duration as npd's ApplyConfiguration does, with npd's default when unset.
func npdDuration(t *testing.T, s *string, def time.Duration, what string) time.Duration {
	t.Helper()
	if s == nil {
		return def
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d <= 0 {
		t.Fatalf("%s %q: npd needs a positive duration (%v)", what, *s, err)
	}
	return d
}

func loadNPDConfig(t *testing.T) npdCustomPluginConfig {
	t.Helper()
	b, err := os.ReadFile(npdConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c npdCustomPluginConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s: %v", npdConfigFile, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the object", npdConfigFile)
	}
	return c
}

// The shipped custom plugin monitor decodes with npd's own keys (an unknown key fails), passes
// npd's ApplyConfiguration and Validate, and gives each run of rdmadiag the time it needs: the
// rdmadiag --timeout in the rule's args ends a blocked run with a verdict (and rdmadiag returns
// within checks.Grace of it) before npd's timeout kills it without one.
func TestNPDPluginMonitorConfig(t *testing.T) {
	c := loadNPDConfig(t)
	if c.Plugin != "custom" {
		t.Errorf("plugin %q: npd supports only \"custom\"", c.Plugin)
	}
	g := c.PluginGlobalConfig
	interval := npdDuration(t, g.InvokeIntervalString, 30*time.Second, "invoke_interval")
	global := npdDuration(t, g.TimeoutString, 5*time.Second, "timeout")
	if g.MaxOutputLength == nil || *g.MaxOutputLength != 80 {
		t.Errorf("max_output_length %v: the npd format writes up to 80 bytes", g.MaxOutputLength)
	}
	// Two rdmadiag runs at once would only compete for the same sysfs and netlink reads.
	if g.Concurrency == nil || *g.Concurrency != 1 {
		t.Errorf("concurrency %v, want 1", g.Concurrency)
	}
	conds := map[string]bool{}
	for _, d := range c.DefaultConditions {
		conds[d.Type] = true
		if d.Reason == "" || d.Message == "" {
			t.Errorf("condition %s: npd shows its default reason and message while healthy; both must be set", d.Type)
		}
	}
	var perm, temp int
	for i, r := range c.Rules {
		// Validate: a rule's timeout may not exceed the global one; run() uses the rule's only
		// when it is below the global one.
		ruleTimeout := npdDuration(t, r.TimeoutString, global, "rule timeout")
		if ruleTimeout > global {
			t.Errorf("rule %d: timeout %v above the global %v: npd refuses the file", i, ruleTimeout, global)
		}
		effective := min(ruleTimeout, global)
		every := npdDuration(t, r.InvokeIntervalString, interval, "rule invoke_interval")
		if effective >= every {
			t.Errorf("rule %d: timeout %v does not end a run before the next one (%v)", i, effective, every)
		}
		switch r.Type {
		case "permanent":
			perm++
			if !conds[r.Condition] {
				t.Errorf("rule %d: permanent condition %q has no default condition", i, r.Condition)
			}
		case "temporary":
			temp++
		default:
			t.Errorf("rule %d: type %q", i, r.Type)
		}
		if filepath.Base(r.Path) != "rdmadiag" || len(r.Args) == 0 || r.Args[0] != "check" {
			t.Fatalf("rule %d: %s %q is not rdmadiag check", i, r.Path, r.Args)
		}
		ti := slices.Index(r.Args, "--timeout")
		if ti < 0 || ti+1 >= len(r.Args) {
			t.Errorf("rule %d: no --timeout in %q: rdmadiag's default (2m) would outlast npd's %v", i, r.Args, effective)
			continue
		}
		d, err := time.ParseDuration(r.Args[ti+1])
		if err != nil || d+checks.Grace+5*time.Second > effective {
			t.Errorf("rule %d: rdmadiag --timeout %s leaves no room before npd's %v", i, r.Args[ti+1], effective)
		}
	}
	if perm != 1 || temp != 1 {
		t.Errorf("%d permanent and %d temporary rules; want RDMAUnhealthy and one rule for warnings", perm, temp)
	}
}

// Each rule, run as npd runs it, on fixtures of each verdict: the permanent rule flips the
// condition (exit 1) only on a critical host; the temporary rule raises its event (any exit
// other than 0) on warnings too. The line fits max_output_length.
func TestNPDPluginMonitorRulesOnFixtures(t *testing.T) {
	c := loadNPDConfig(t)
	hosts := []struct {
		name string
		args []string
	}{
		{"healthy", []string{"--snapshot", fixture("healthy")}},
		{"warning", []string{"--snapshot", fixture("cq-raw-mlx5"), "--raw-contexts"}},
		{"critical", []string{"--snapshot", fixture("port-down")}},
	}
	want := map[string][]int{"permanent": {0, 0, 1}, "temporary": {0, 1, 1}}
	for _, r := range c.Rules {
		for i, h := range hosts {
			out, errs, code := run(t, append(slices.Clone(r.Args), h.args...)...)
			line := strings.TrimSpace(out)
			if code != want[r.Type][i] || len(line) > *c.PluginGlobalConfig.MaxOutputLength || line == "" {
				t.Errorf("%s rule %q on a %s host: exit %d (want %d), %q %s", r.Type, r.Reason, h.name, code, want[r.Type][i], line, errs)
			}
		}
	}
}
