// Package checks holds the check registry, the environment a check runs in and the runner that
// executes checks concurrently and turns failures into "unknown" findings. The checks themselves
// live in one package per layer (checks/pcie, checks/firmware, ...) and register in init().
package checks

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Check is one registered check. Layer is derived from the id ("pcie.link" -> "pcie").
type Check struct {
	// ID is stable, lowercase "layer.name"; it is the JSON check_id and the --only/--skip key.
	ID string
	// Description is one line for `rdmadiag list`.
	Description string
	// Probe marks checks that create verbs resources on the device; --no-probe skips them and
	// they never run on a snapshot.
	Probe bool
	// Run returns the findings. An error means the check could not run at all; the runner turns it
	// into one "unknown" finding that carries the error text.
	Run func(ctx context.Context, env *Env) ([]engine.Finding, error)
	// Fault is the fault-table row used for the "unknown" finding when Run fails.
	Fault string
	// VerbsDevices marks checks that ask Host.VerbsDevices (libibverbs opens every device). A run
	// that selects one lets the inventory take the GID tables from the same query
	// (InventoryOptions); a run that selects none loads no verbs library.
	VerbsDevices bool
	// KernelLog marks checks that read the run's kernel log (Env.KernelLog). A run that selects
	// one starts reading the log when it starts (Run), beside the inventory: the first check to
	// ask for it would otherwise do so only after its own wait for the inventory, which waits
	// for the verbs query. /dev/kmsg gives one record per read, so the log is thousands of reads.
	KernelLog bool
	// Origin is where the check comes from, for `rdmadiag list`: empty for the checks of this
	// module's layer packages; Register sets it to the Go package that registered any other
	// (a site's own binary, examples/sitecheck); an executable plugin's is its file.
	Origin string
	// InLayer places a check whose id does not name its layer: an executable site plugin
	// (PluginPrefix.<name>, internal/plugins) is in the layer its header names, else
	// report.SiteLayer. Empty for every other check, whose layer is its id's.
	InLayer string
}

// PluginPrefix is the first part of an executable site plugin's id: plugin.<name>. It is not a
// layer; the plugin's InLayer is. --only and --skip select every plugin by it.
const PluginPrefix = "plugin"

// InventoryOptions are the inventory sources that suit a run of these checks.
func InventoryOptions(cs []Check) inventory.Options {
	var o inventory.Options
	for _, c := range cs {
		o.VerbsGIDs = o.VerbsGIDs || c.VerbsDevices
	}
	return o
}

// Layer is the layer part of the id, or InLayer for a plugin.
func (c Check) Layer() string {
	if c.InLayer != "" {
		return c.InLayer
	}
	l, _, _ := strings.Cut(c.ID, ".")
	return l
}

// prefix is the id's first part: the layer, or PluginPrefix.
func (c Check) prefix() string {
	l, _, _ := strings.Cut(c.ID, ".")
	return l
}

// Registry holds checks by id.
type Registry struct {
	mu     sync.Mutex
	checks map[string]Check
}

// NewRegistry returns an empty registry (tests build their own).
func NewRegistry() *Registry { return &Registry{checks: map[string]Check{}} }

// Default is the registry the layer packages add themselves to in init(). It is the one piece of
// package state, and it only holds code, never configuration.
var Default = NewRegistry()

// Register adds a check to the default registry, in the init() of the package that holds it.
func Register(c Check) {
	if c.Origin == "" {
		c.Origin = registrant(2)
	}
	Default.Add(c)
}

// builtin is the package path of the checks and their layer packages, whose checks have no origin.
const builtin = "github.com/rdmadiag/rdmadiag/checks"

// registrant is the package of the function skip frames up the stack, or "" for a built-in
// layer package. A main package is named by its import path from the build information.
func registrant(skip int) string {
	pc, _, _, ok := runtime.Caller(skip)
	fn := runtime.FuncForPC(pc)
	if !ok || fn == nil {
		return ""
	}
	pkg := packageOf(fn.Name())
	if pkg == "main" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
			pkg = bi.Path
		}
	}
	if pkg == builtin || strings.HasPrefix(pkg, builtin+"/") {
		return ""
	}
	return pkg
}

// packageOf is the package path of a function's full name ("example.com/site/checks.init.0").
func packageOf(fn string) string {
	slash := strings.LastIndex(fn, "/")
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// Add registers a check; it panics on programming errors (bad or duplicate ids), which the
// registry test catches before any release.
func (r *Registry) Add(c Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.add(c); err != nil {
		panic("checks: " + err.Error())
	}
}

func (r *Registry) add(c Check) error {
	// A plugin id and a placing InLayer go together: neither is valid without the other.
	if report.LayerRank(c.Layer()) < 0 || !strings.Contains(c.ID, ".") || strings.ToLower(c.ID) != c.ID ||
		(c.InLayer != "") != (c.prefix() == PluginPrefix) {
		return fmt.Errorf("bad id %q (want lowercase layer.name with layer in %v, or %s.name placed in a layer)", c.ID, report.Layers, PluginPrefix)
	}
	if _, dup := r.checks[c.ID]; dup {
		return fmt.Errorf("duplicate id %q", c.ID)
	}
	if c.Run == nil || c.Fault == "" {
		return fmt.Errorf("%q needs Run and Fault", c.ID)
	}
	r.checks[c.ID] = c
	return nil
}

// With is a new registry holding r's checks and cs (a run's executable plugins, found when the
// run starts); an id that is bad or already taken is an error, r is unchanged.
func (r *Registry) With(cs ...Check) (*Registry, error) {
	out := NewRegistry()
	for _, c := range r.All() {
		out.checks[c.ID] = c
	}
	for _, c := range cs {
		if err := out.add(c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Has reports whether a check of this id is registered.
func (r *Registry) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.checks[id]
	return ok
}

// All returns the checks sorted by layer order, then id.
func (r *Registry) All() []Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Check, 0, len(r.checks))
	for _, c := range r.checks {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		li, lj := report.LayerRank(out[i].Layer()), report.LayerRank(out[j].Layer())
		if li != lj {
			return li < lj
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Select filters checks by --only and --skip terms. A term is a layer ("pcie"), a check id
// ("pcie.link") or a glob ("*.probe"). Unknown terms are an error so that a typo never
// silently selects nothing.
func (r *Registry) Select(only, skip []string, noProbe bool) ([]Check, error) {
	all := r.All()
	for _, t := range append(append([]string{}, only...), skip...) {
		if !matchesAny(all, t) {
			return nil, fmt.Errorf("no check or layer matches %q (see `rdmadiag list`)", t)
		}
	}
	var out []Check
	for _, c := range all {
		if len(only) > 0 && !matchTerms(c, only) {
			continue
		}
		if matchTerms(c, skip) {
			continue
		}
		if noProbe && c.Probe {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func matchTerms(c Check, terms []string) bool {
	for _, t := range terms {
		if matchTerm(c, t) {
			return true
		}
	}
	return false
}

func matchTerm(c Check, t string) bool {
	t = strings.ToLower(strings.TrimSpace(t))
	if t == c.ID || t == c.Layer() || t == c.prefix() {
		return true
	}
	m, _ := path.Match(t, c.ID)
	return m
}

func matchesAny(cs []Check, t string) bool {
	for _, c := range cs {
		if matchTerm(c, t) {
			return true
		}
	}
	return false
}
