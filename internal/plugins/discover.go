// Package plugins runs a site's executable checks: every executable file of a directory
// (/etc/rdmadiag/checks.d) is one check, plugin.<name>, given the run's facts as JSON on its
// standard input and answering findings as JSON on its standard output (docs/plugins.md). A
// plugin is untrusted: its output is validated strictly, its failures (a timeout, a crash, too
// much or invalid output, a lie) are one unknown finding, and the run never waits on it beyond
// its deadline.
package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// DefaultDir is where a live run looks for plugins when --plugins is not given; a missing
// directory means no plugins.
const DefaultDir = "/etc/rdmadiag/checks.d"

// MaxPlugins is how many plugins a run takes from the directory, in name order: a directory
// that holds more (a build tree unpacked into it, a loop that filled it) is misconfigured, and
// reading every header and running every file would make the run as long as the directory.
const MaxPlugins = 64

// ExcessID is the check that stands for the files past MaxPlugins (IDOf never starts a name
// with "_", so no file takes it).
const ExcessID = "plugin._excess"

// Plugin is one executable file of the directory, as found (nothing is executed to find it).
type Plugin struct {
	// Path is the file in the directory; Exec is what runs (the target of a symlink).
	Path, Exec string
	// ID is plugin.<name>: the file's name without its extension, lowercased, [a-z0-9_] only.
	ID string
	// Header is what the file's "# rdmadiag:" line says (layer, description, fault row).
	Header Header
	// Refused says why the file is not run (insecure ownership or mode, a bad header, an id
	// another file has); the plugin's check is then one unknown finding saying so.
	Refused error
}

// skipped are the names a package manager, an editor or a README leaves beside the plugins,
// which are never plugins (run-parts(8) ignores the same kinds of names).
func skipped(name string) bool {
	switch {
	case strings.HasPrefix(name, "."), strings.HasSuffix(name, "~"), strings.Contains(name, ".dpkg-"),
		strings.HasPrefix(strings.ToUpper(name), "README"):
		return true
	}
	for _, ext := range []string{".rpmnew", ".rpmsave", ".rpmorig", ".bak", ".orig", ".disabled"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// Discover lists the plugins of dir, sorted by file name. Files that are not plugins (skipped
// names, directories, files with no execute bit, links to anything but such a file) are left
// out silently; plugins that may not run are returned with Refused set. euid is the user
// running rdmadiag, whose own files are trusted besides root's. The error is dir's own: it
// cannot be listed.
func Discover(dir string, euid int) ([]Plugin, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	// A directory that others may write to lets them place or swap a plugin: none of its files
	// runs (each says why), however its own files look.
	dirErr := secureChain(abs, euid)
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out []Plugin
	excess := 0
	for _, name := range names {
		if skipped(name) {
			continue
		}
		p := filepath.Join(abs, name)
		exec, ok, err := candidate(p)
		if !ok && err == nil {
			continue
		}
		if len(out) == MaxPlugins {
			excess++
			continue
		}
		pl := Plugin{Path: p, Exec: exec, ID: IDOf(name)}
		switch {
		case err != nil:
			pl.Refused = err
		case dirErr != nil:
			pl.Refused = dirErr
		default:
			pl.Refused = secureChain(exec, euid)
		}
		if pl.Refused == nil {
			h, err := ReadHeader(exec)
			pl.Header, pl.Refused = h, err
		}
		out = append(out, pl)
	}
	uniqueIDs(out)
	if excess > 0 {
		out = append(out, Plugin{Path: abs, ID: ExcessID, Refused: fmt.Errorf(
			"%d more executable files than the %d plugins a run takes (the first %d by name ran): move what is not a check out of %s",
			excess, MaxPlugins, MaxPlugins, abs)})
	}
	return out, nil
}

// candidate resolves p to the file that would run: ok when it is a regular file with an
// execute bit, directly or through symlinks (which may lead out of the directory: the target
// is then checked as a file of the directory would be, by the caller).
func candidate(p string) (exec string, ok bool, err error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p, err)
	}
	exec = p
	if fi.Mode()&fs.ModeSymlink != 0 {
		exec, err = filepath.EvalSymlinks(p)
		if err != nil {
			return "", false, fmt.Errorf("%s: a symlink whose target cannot be resolved: %w", p, err)
		}
		if fi, err = os.Lstat(exec); err != nil {
			return "", false, fmt.Errorf("%s: %w", exec, err)
		}
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false, nil
	}
	return exec, true, nil
}

// secureChain refuses p when it, or a directory above it, may be changed by someone other
// than root and the user running rdmadiag (OpenSSH's StrictModes holds authorized_keys to the
// same rule): group- or world-writable, or owned by another user. A root-owned sticky directory
// (/tmp) above it is accepted: others cannot rename or remove what they do not own in it.
// p holds no symlink (filepath.EvalSymlinks or a directory made absolute and resolved).
func secureChain(p string, euid int) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for cur, first := real, true; ; first = false {
		fi, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%s: %w", cur, err)
		}
		if err := secure(cur, fi, euid, !first); err != nil {
			return err
		}
		up := filepath.Dir(cur)
		if up == cur {
			return nil
		}
		cur = up
	}
}

func secure(p string, fi fs.FileInfo, euid int, above bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner known", p)
	}
	if st.Uid != 0 && int(st.Uid) != euid {
		return fmt.Errorf("%s is owned by uid %d, neither root nor the user running rdmadiag (uid %d)", p, st.Uid, euid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		if above && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 && st.Uid == 0 {
			return nil
		}
		what := "group-writable"
		if fi.Mode().Perm()&0o002 != 0 {
			what = "world-writable"
		}
		return fmt.Errorf("%s is %s (mode %04o)", p, what, fi.Mode().Perm())
	}
	return nil
}

// IDOf is the check id of a plugin file: plugin.<name>, name the file's name without its
// extension, lowercased, each run of other characters than [a-z0-9] one "_", none at either
// end, at most 48 characters; a name with nothing left is named by a digest of it.
func IDOf(file string) string {
	base := filepath.Base(file)
	if ext := filepath.Ext(base); ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	name := strings.TrimRight(b.String(), "_")
	if len(name) > 48 {
		name = strings.TrimRight(name[:48], "_")
	}
	if name == "" {
		sum := sha256.Sum256([]byte(file))
		name = "file_" + hex.EncodeToString(sum[:4])
	}
	return "plugin." + name
}

// uniqueIDs refuses every file whose id an earlier file (in name order) has, and gives it an
// id of its own so that it can still say so as a check.
func uniqueIDs(ps []Plugin) {
	// Every id as found, held by the first file that has it: a renamed duplicate takes none.
	holder := map[string]string{}
	for _, p := range ps {
		if _, ok := holder[p.ID]; !ok {
			holder[p.ID] = p.Path
		}
	}
	for i := range ps {
		p := &ps[i]
		first := holder[p.ID]
		if first == p.Path {
			continue
		}
		if p.Refused == nil {
			p.Refused = fmt.Errorf("its id %s is already that of %s (rename one of them)", p.ID, first)
		}
		for n := 2; ; n++ {
			id := fmt.Sprintf("%s_%d", p.ID, n)
			if _, ok := holder[id]; !ok {
				holder[id] = p.Path
				p.ID = id
				break
			}
		}
	}
}
