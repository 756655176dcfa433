// Package tempdir makes the process's temporary directories (an unpacked snapshot, a recording
// in progress) and removes them on every way out: each one's own remove function on the paths
// that return, and RemoveAll for the paths that do not (a second signal, which exits at once;
// the end of main, where a goroutine left blocked at a deadline may still own one).
package tempdir

import (
	"os"
	"sync"
)

var (
	mu   sync.Mutex
	dirs = map[string]bool{}
)

// Make creates a fresh directory as os.MkdirTemp does and registers it; remove deletes it and
// forgets it, and may be called more than once.
func Make(pattern string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", func() {}, err
	}
	mu.Lock()
	dirs[dir] = true
	mu.Unlock()
	return dir, func() {
		os.RemoveAll(dir)
		mu.Lock()
		delete(dirs, dir)
		mu.Unlock()
	}, nil
}

// RemoveAll deletes every directory Make made that has not been removed yet; the process calls it
// before os.Exit, which runs no deferred function.
func RemoveAll() {
	mu.Lock()
	defer mu.Unlock()
	for d := range dirs {
		os.RemoveAll(d)
		delete(dirs, d)
	}
}

// Held lists the directories not removed yet (for tests).
func Held() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	return out
}
