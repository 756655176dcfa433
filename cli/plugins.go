package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/plugins"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// pluginFlags are --plugins, --no-plugins and --plugin-timeout (docs/plugins.md).
type pluginFlags struct {
	dir     string
	given   bool // --plugins was on the command line (even as '')
	off     bool
	timeout time.Duration
	// timeoutGiven is --plugin-timeout on the command line; used is the directory the run took.
	timeoutGiven bool
	used         string
}

func (p *pluginFlags) register(c *cobra.Command, timeout bool) {
	fl := c.Flags()
	fl.StringVar(&p.dir, "plugins", "", "run each executable file of this directory as a site check, plugin.<name> (docs/plugins.md; "+
		"default "+plugins.DefaultDir+" on a live host when it exists, none on a snapshot or --root; '' for none)")
	fl.BoolVar(&p.off, "no-plugins", false, "run no site plugin")
	if timeout {
		fl.DurationVar(&p.timeout, "plugin-timeout", plugins.DefaultTimeout, "deadline of each site plugin, after which it is killed with its process group")
	}
}

func (p *pluginFlags) resolve(c *cobra.Command) {
	p.given, p.timeoutGiven = c.Flags().Changed("plugins"), c.Flags().Changed("plugin-timeout")
}

// directory is the plugin directory of a run on a host of kind live, or "" for none: the one
// given, else the default on a live host when it exists (absent means no plugins). A plugin
// never runs on a snapshot or tree unless the operator names its directory.
func (p *pluginFlags) directory(a *App, live bool) (string, error) {
	switch {
	case p.off && p.given && p.dir != "":
		return "", usageErr("--plugins and --no-plugins exclude each other")
	case p.off:
		return "", nil
	case p.given && p.dir == "":
		return "", nil
	case p.given:
		fi, err := os.Stat(p.dir)
		if err != nil {
			return "", usageErr("--plugins: %v", err)
		}
		if !fi.IsDir() {
			return "", usageErr("--plugins %s: not a directory", p.dir)
		}
		return p.dir, nil
	case !live:
		return "", nil
	}
	dir := a.PluginDir
	if dir == "" {
		dir = plugins.DefaultDir
	}
	if _, err := os.Lstat(dir); err != nil {
		return "", nil
	}
	return dir, nil
}

// registry is the registry a run (check, or list) selects from: the built-in (and site Go)
// checks and the plugins of the directory p names for a host that is live or not, described
// (nothing runs until the host is open). A directory that cannot be listed stops the run (3),
// as an option file that cannot be read does; dir is "" when the run takes no plugins.
func (p *pluginFlags) registry(a *App, live bool) (reg *checks.Registry, ps []plugins.Plugin, dir string, err error) {
	if dir, err = p.directory(a, live); err != nil || dir == "" {
		return a.Registry, nil, "", err
	}
	if ps, err = plugins.Discover(dir, os.Geteuid()); err != nil {
		return nil, nil, "", &exitError{code: 3, err: err}
	}
	cs := make([]checks.Check, 0, len(ps))
	for _, pl := range ps {
		cs = append(cs, plugins.Describe(pl, engine.DefaultFaults()))
	}
	if reg, err = a.Registry.With(cs...); err != nil {
		return nil, nil, "", err
	}
	return reg, ps, dir, nil
}

// bindPlugins replaces the selected plugins' descriptions with checks that run them on h.
func (a *App) bindPlugins(toRun []checks.Check, ps []plugins.Plugin, h *host.Host, timeout time.Duration, builtin *checks.Registry) []checks.Check {
	if len(ps) == 0 {
		return toRun
	}
	environ := os.Environ
	if a.Environ != nil {
		environ = a.Environ
	}
	root := h.Root()
	if h.Kind() == host.KindLive {
		root = "/"
	}
	runnable := map[string]checks.Check{}
	for _, c := range plugins.Checks(plugins.Run{Source: string(h.Kind()), Root: root, Version: a.Version, Timeout: timeout,
		Environ: environ(), Faults: engine.DefaultFaults(), Builtin: builtin.Has}, ps) {
		runnable[c.ID] = c
	}
	out := make([]checks.Check, len(toRun))
	for i, c := range toRun {
		if r, ok := runnable[c.ID]; ok {
			c = r
		}
		out[i] = c
	}
	return out
}
