package host

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

type seen struct {
	mu  sync.Mutex
	ops []string
}

func (s *seen) add(op string) { s.mu.Lock(); s.ops = append(s.ops, op); s.mu.Unlock() }
func (s *seen) FileRead(p string, _ []byte, err error) {
	s.add("read " + p)
}
func (s *seen) Listed(p string)                                    { s.add("list " + p) }
func (s *seen) Touched(p string)                                   { s.add("touch " + p) }
func (s *seen) EthtoolRead(n string, _ map[string]uint64, _ error) { s.add("ethtool " + n) }

type echoConn struct{ tag string }

func (c echoConn) Exchange(Request) ([]byte, error) { return []byte(c.tag), nil }

// The observed view reports each read once, at the path the caller asked for, and sends netlink
// and devlink through the wrapper; the host it came from stays unobserved.
func TestObserved(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/a"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/a/f"), []byte("1\n"), 0o644)
	os.Symlink("a", filepath.Join(root, "sys/l"))
	h, err := New(Options{Root: root, Kind: KindSnapshot, Netlink: echoConn{"nl"}, Devlink: echoConn{"dl"}})
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	var wrapped []string
	v := h.Observed(&s, func(which string, c NetlinkConn) NetlinkConn {
		wrapped = append(wrapped, which)
		return echoConn{"wrapped " + which}
	})
	v.ReadString("/sys/l/f")
	v.ReadDir("/sys/a")
	v.Exists("/sys/l")
	v.EthtoolStats("eth0")
	want := []string{"read /sys/l/f", "list /sys/a", "touch /sys/l", "ethtool eth0"}
	if len(s.ops) != len(want) {
		t.Fatalf("observed %q, want %q", s.ops, want)
	}
	for i := range want {
		if s.ops[i] != want[i] {
			t.Errorf("observed %q, want %q", s.ops, want)
		}
	}
	if b, _ := v.Netlink().Exchange(Request{}); string(b) != "wrapped netlink" {
		t.Errorf("netlink through the view: %q", b)
	}
	if b, _ := v.Devlink().Exchange(Request{}); string(b) != "wrapped devlink" {
		t.Errorf("devlink through the view: %q", b)
	}
	h.ReadString("/sys/l/f")
	if b, _ := h.Netlink().Exchange(Request{}); string(b) != "nl" || len(s.ops) != len(want) {
		t.Errorf("the original host is observed too: %q %q", b, s.ops)
	}
}
