package observe

import (
	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
)

// ModulesPath is where the kernel lists the loaded modules (kernel/module/procfs.c).
const ModulesPath = "/proc/modules"

// ModuleList is /proc/modules as the run first read it. ReadErr is why the file could not be
// read (the host's error, which names the path; Mods is then empty); ParseErr says which lines
// did not parse, the good ones being in Mods. Only driver.modules reports ParseErr as a finding
// of its own; a check whose judgement needs a line that did not parse says so (see Unparsed).
type ModuleList struct {
	Mods     kmod.Modules
	ReadErr  error
	ParseErr error
}

// Modules is the run's module list.
var Modules = checks.NewFact("module list", func(env *checks.Env) ModuleList {
	l := ModuleList{Mods: kmod.Modules{}}
	b, err := env.Host.ReadFile(ModulesPath)
	if err != nil {
		l.ReadErr = err
		return l
	}
	l.Mods, l.ParseErr = kmod.ParseModules(b) // its errors name the file
	return l
})

// Unparsed returns those of names whose line did not parse (its first field is the name): a
// judgement of those modules cannot rely on the parsed list.
func (l ModuleList) Unparsed(names ...string) []string {
	return kmod.UnparsedNames(l.ParseErr, names...)
}
