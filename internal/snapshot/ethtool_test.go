package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

func TestEthtoolReplay(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{RootDir, EthtoolDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		MetaFile:                               `{"format":"rdmadiag-snapshot/1"}`,
		filepath.Join(EthtoolDir, "eth0.json"): `{"rx_wqe_err":3,"tx_cqe_err":0}`,
		filepath.Join(EthtoolDir, "bad0.json"): `{"rx_wqe_err":-1}`,
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := openDir(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.EthtoolStats("eth0")
	if err != nil || st["rx_wqe_err"] != 3 || len(st) != 2 {
		t.Errorf("eth0: %v %v", st, err)
	}
	if _, err := h.EthtoolStats("eth1"); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("unrecorded netdev: %v, want ErrNotRecorded", err)
	}
	if _, err := h.EthtoolStats("bad0"); err == nil {
		t.Error("garbled statistics: want an error")
	}
	if _, err := h.EthtoolStats("../meta"); err == nil {
		t.Error("a name that is no netdev name must be refused before it becomes a path")
	}
}
