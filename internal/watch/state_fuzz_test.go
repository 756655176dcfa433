package watch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzWatchState: whatever the state file holds, loading it, restoring it, exposing the
// conditions and writing the state again never panics.
func FuzzWatchState(f *testing.F) {
	f.Add([]byte(`{"format":"` + stateFormat + `","boot_id":"b","conditions":[{"identity":{"key":"pci-0000:3b:00.0/1","device":"mlx5_0","port":1},"kind":"port_down","severity":"critical","since":"2026-01-01T00:00:00Z","message":"m"}],"downs":{"x":["2026-01-01T00:00:00Z"]},"up":{"x":true}}`))
	f.Add([]byte(`{"format":"` + stateFormat + `","conditions":[{"identity":{"key":"\xff\xfe"},"kind":"gone","severity":"warning"}]}`))
	f.Add([]byte(`{"format":"` + stateFormat + `","conditions":null,"downs":{"":null}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, StateFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := loadState(dir)
		if err != nil || s == nil {
			return
		}
		tr := NewTracker(DefaultRules)
		tr.restore(*s)
		m := newMetrics()
		m.conditions(tr.Active())
		tr.Tick(time.Now())
		if err := saveState(dir, tr.export("b", time.Now())); err != nil {
			t.Fatal(err)
		}
	})
}
