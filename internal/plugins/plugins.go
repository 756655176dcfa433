package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// Fault is the fault-table row of a plugin's findings when neither they nor its header name one.
const Fault = "site-plugin"

// DefaultTimeout bounds each plugin (--plugin-timeout); DefaultParallel plugins run at a time.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultParallel = 4
)

// Run is what the plugins of one run are told and bound by.
type Run struct {
	// Source is live, snapshot or root; Root the host's root directory ("/" live).
	Source, Root string
	// Version is rdmadiag's (RDMADIAG_VERSION).
	Version string
	// Timeout bounds each plugin; Parallel is how many run at a time.
	Timeout  time.Duration
	Parallel int
	// Environ is rdmadiag's own environment: its RDMADIAG_* variables are passed on (a site's
	// settings for its plugins, RDMADIAG_PKEYS); nothing else is.
	Environ []string
	// Faults is the fault table a plugin's rows must be in; Builtin says which ids are the
	// registered checks' (a plugin claiming one lies).
	Faults  *engine.FaultTable
	Builtin func(id string) bool
}

// set is one run's plugins: the facts they share, computed once, and the slots they take.
type set struct {
	run       Run
	slots     chan struct{}
	factsOnce sync.Once
	facts     []byte
}

// Checks are the plugins as checks of one run: each runs its file (or, refused, says why it
// does not); they share the run's facts and at most run.Parallel execute at a time.
func Checks(r Run, ps []Plugin) []checks.Check {
	if r.Parallel < 1 {
		r.Parallel = DefaultParallel
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	s := &set{run: r, slots: make(chan struct{}, r.Parallel)}
	out := make([]checks.Check, 0, len(ps))
	for _, p := range ps {
		out = append(out, s.check(p))
	}
	return out
}

// Describe is the check of a plugin without a way to run it, for `rdmadiag list`.
func Describe(p Plugin, faults *engine.FaultTable) checks.Check {
	return (&set{run: Run{Faults: faults}}).check(p)
}

func (s *set) check(p Plugin) checks.Check {
	c := checks.Check{ID: p.ID, InLayer: p.Header.Layer, Description: p.Header.Description, Fault: Fault, Origin: p.Path}
	if c.InLayer == "" {
		c.InLayer = report.SiteLayer
	}
	if c.Description == "" {
		c.Description = "site plugin (no description in its header)"
	}
	refused := p.Refused
	if refused == nil && p.Header.Fault != "" {
		if _, ok := s.run.Faults.Row(p.Header.Fault); !ok {
			refused = fmt.Errorf("%s: header: fault %q is not a row of the fault table (report/engine/faults.json)", p.Path, p.Header.Fault)
		} else {
			c.Fault = p.Header.Fault
		}
	}
	if refused != nil {
		c.Description = "refused: " + refused.Error()
		c.Run = func(context.Context, *checks.Env) ([]checks.Finding, error) {
			return []checks.Finding{failed(p, "was not run: "+refused.Error(), nil)}, nil
		}
		return c
	}
	c.Run = func(ctx context.Context, env *checks.Env) ([]checks.Finding, error) {
		return s.execute(ctx, env, p, c.Fault)
	}
	return c
}

func (s *set) execute(ctx context.Context, env *checks.Env, p Plugin, fault string) ([]checks.Finding, error) {
	s.factsOnce.Do(func() {
		s.facts, _ = json.Marshal(factsOf(env, s.run.Source, s.run.Root)) // plain data: cannot fail
		s.facts = append(s.facts, '\n')
	})
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, checks.CutShort(ctx)
	}
	r := execute(ctx, p.Exec, s.environment(), s.facts, s.run.Timeout)
	<-s.slots
	if r.Ended != nil {
		return nil, fmt.Errorf("plugin %s %s: %w", p.Path, r.Failure, checks.CutShort(ctx))
	}
	if r.Failure != "" {
		return []checks.Finding{failed(p, r.Failure, &r)}, nil
	}
	return s.judge(env, p, fault, r), nil
}

// judge turns a plugin's output into findings, or into one unknown finding when the output is
// not the protocol's or any finding breaks its rules: a plugin that misreports one finding is
// not trusted for the others (a valid-looking "ok" beside a lie proves nothing).
func (s *set) judge(env *checks.Env, p Plugin, fault string, r result) []checks.Finding {
	o, err := Decode(r.Stdout)
	if err != nil {
		what := "printed output that is not the plugin protocol: "
		if _, ok := err.(*SyntaxError); ok {
			what = "printed invalid JSON "
		}
		return []checks.Finding{failed(p, what+err.Error(), &r)}
	}
	inv := Inventory{Devices: map[string]bool{}, Builtin: s.run.Builtin}
	for _, d := range env.Inventory().Devices {
		inv.Devices[d.Name] = true
	}
	for _, x := range env.Inventory().Excluded {
		inv.Devices[x.Name] = true
	}
	var lies []string
	for i, f := range *o.Findings {
		for _, b := range Validate(p.ID, f, inv) {
			lies = append(lies, fmt.Sprintf("findings[%d]: %s", i, b))
		}
	}
	if len(lies) > 0 {
		bad := failed(p, fmt.Sprintf("reported what rdmadiag does not trust, so none of its %d findings is kept: %s", len(*o.Findings), lies[0]), &r)
		for i, l := range lies {
			if i == 8 {
				bad.Evidence = append(bad.Evidence, report.Ev("rule broken", fmt.Sprintf("and %d more", len(lies)-i), "plugin output"))
				break
			}
			bad.Evidence = append(bad.Evidence, report.Ev("rule broken", l, "plugin output"))
		}
		return []checks.Finding{bad}
	}
	if len(*o.Findings) == 0 {
		return []checks.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.OK,
			Summary:  "reported nothing to judge (" + p.Path + ")",
			Evidence: []report.Evidence{report.Ev("plugin", p.Path, "")}, Fault: fault}}}
	}
	out := make([]checks.Finding, 0, len(*o.Findings))
	for _, f := range *o.Findings {
		rf := report.Finding{Subject: report.Subject{Kind: "host"}, Severity: severities[f.Severity], Summary: f.Summary,
			Evidence: f.Evidence, Remediation: f.Remediation, Fault: fault, Action: report.Action(f.Action)}
		if f.Subject != nil {
			rf.Subject = *f.Subject
		}
		if f.Fault != "" {
			if _, ok := s.run.Faults.Row(f.Fault); ok {
				rf.Fault = f.Fault
			} else {
				rf.Evidence = append(rf.Evidence, report.EvExp("fault row", f.Fault+" (not in the fault table)", rf.Fault, "plugin output"))
			}
		}
		if rf.Severity == report.Skipped {
			// The plugin judged its own limit; --strict counts it as unknown like any other.
			rf.Limit = &report.Limit{Kind: report.LimitSource, Lift: "see the plugin's evidence (" + p.Path + ")"}
		}
		ef := checks.Finding{Finding: rf}
		if f.Check != "" && f.Check != p.ID {
			ef.Key = keyOf(rf.Subject.Name, f.Check)
		}
		out = append(out, ef)
	}
	return out
}

func keyOf(subject, sub string) string {
	if subject == "" {
		return sub
	}
	return subject + "/" + sub
}

// failed is the one unknown finding of a plugin that did not answer: the file, what it did,
// and the end of what it wrote on standard error.
func failed(p Plugin, what string, r *result) checks.Finding {
	f := checks.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Unknown,
		Summary:  "could not check: plugin " + p.Path + " " + what,
		Evidence: []report.Evidence{report.Ev("plugin", p.Path, "")}}}
	if r != nil {
		if t := strings.TrimSpace(r.Stderr); t != "" {
			if last := lastLine(t); last != "" && !strings.Contains(what, "not trust") {
				f.Summary += ": " + words.Truncate(last, 160)
			}
			f.Evidence = append(f.Evidence, report.Ev("stderr (last 4 KiB)", strings.ToValidUTF8(t, "\uFFFD"), "plugin standard error"))
		}
	}
	f.Summary = words.Truncate(f.Summary, 480)
	f.Remediation = "fix or remove " + p.Path + " (docs/plugins.md: the protocol and its rules)"
	return f
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(strings.TrimSpace(ctrl.ReplaceAllString(s, " ")), "\uFFFD")
}

var ctrl = regexp.MustCompile(`[\x00-\x1f\x7f]`)

// environment is what a plugin runs with: the fixed variables and the operator's RDMADIAG_*.
func (s *set) environment() []string {
	env := []string{"PATH=" + Path, "LANG=C.UTF-8", "HOME=/",
		"RDMADIAG_ROOT=" + s.run.Root, "RDMADIAG_SOURCE=" + s.run.Source, "RDMADIAG_VERSION=" + s.run.Version,
		fmt.Sprintf("RDMADIAG_FACTS_SCHEMA=%d", FactsSchema)}
	fixed := map[string]bool{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		fixed[k] = true
	}
	for _, e := range s.run.Environ {
		k, v, ok := strings.Cut(e, "=")
		if ok && strings.HasPrefix(k, "RDMADIAG_") && !fixed[k] && envName.MatchString(k) && len(v) <= 4096 {
			env = append(env, e)
		}
	}
	return env
}

var envName = regexp.MustCompile(`^[A-Z0-9_]+$`)
