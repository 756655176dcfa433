package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file, fifo := filepath.Join(dir, "r.json"), filepath.Join(dir, "fifo.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRegular(file)
	if err != nil {
		t.Fatalf("regular file: %v", err)
	}
	f.Close()
	// Without a writer, a blocking open would wait here for ever.
	if _, err := OpenRegular(fifo); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "fifo.json") {
		t.Errorf("FIFO: %v; want ErrNotRegular naming the file", err)
	}
	if _, err := OpenRegular(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v; want ErrNotExist", err)
	}
}
