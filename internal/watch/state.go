package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateFile is the file in --state-dir that keeps the conditions across restarts.
const StateFile = "watch-state.json"

const stateFormat = "rdmadiag-watch-state/1"

// maxStateBytes bounds what is read of a state file: a file larger than any state watch
// writes is not one of its own.
const maxStateBytes = 8 << 20

// savedState is the state file: the conditions of one boot.
type savedState struct {
	Format     string                 `json:"format"`
	BootID     string                 `json:"boot_id"`
	Saved      time.Time              `json:"saved"`
	Conditions []Condition            `json:"conditions"`
	Downs      map[string][]time.Time `json:"downs,omitempty"`
	Up         map[string]bool        `json:"up,omitempty"`
}

// export is the tracker's state for the state file.
func (t *Tracker) export(bootID string, at time.Time) savedState {
	s := savedState{Format: stateFormat, BootID: bootID, Saved: at, Conditions: t.Active(), Downs: t.downs, Up: t.up}
	return s
}

// restore takes the conditions of s into an empty tracker; conditions of an unknown kind or
// without an identity are dropped.
func (t *Tracker) restore(s savedState) int {
	n := 0
	for _, c := range s.Conditions {
		if !knownKinds[c.Kind] || c.Identity.Key == "" {
			continue
		}
		c := c
		t.conds[condKey{c.Identity.Key, c.Kind}] = &c
		n++
	}
	for k, d := range s.Downs {
		t.downs[k] = d
	}
	for k, u := range s.Up {
		t.up[k] = u
	}
	return n
}

// ErrStateIgnored wraps why a state file was not used (corrupt, another format).
var ErrStateIgnored = errors.New("state file ignored")

// loadState reads dir's state file. It returns nil without error when there is none, and an
// error wrapping ErrStateIgnored for a file that is not a state this program wrote: watch then
// starts clean and says so, it never stops for it.
func loadState(dir string) (*savedState, error) {
	p := filepath.Join(dir, StateFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrStateIgnored, p, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s: not a regular file", ErrStateIgnored, p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrStateIgnored, p, err)
	}
	if len(b) > maxStateBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrStateIgnored, p, maxStateBytes)
	}
	var s savedState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrStateIgnored, p, err)
	}
	if s.Format != stateFormat {
		return nil, fmt.Errorf("%w: %s: format %q, want %q", ErrStateIgnored, p, s.Format, stateFormat)
	}
	return &s, nil
}

// saveState writes s to dir's state file atomically: a temporary file in the same directory,
// synced, then renamed over it, so a crash leaves the old state or the new, never half of one.
func saveState(dir string, s savedState) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+StateFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, StateFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, StateFile), err)
	}
	return nil
}

// bootIDFile identifies this boot (drivers/char/random.c, proc_do_uuid: a random UUID made
// once per boot); relative to the root.
const bootIDFile = "proc/sys/kernel/random/boot_id"
