package snapshot

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"
)

// Synthetic fixtures (hardware the lab cannot emulate) are written by hand as text archives so
// that every value can be reviewed in a diff and cited in the archive's comment. txtar has no
// symlinks and no binary, so two conventions extend it:
//
//	-- root/sys/class/infiniband/mlx5_0 -> ../../devices/pci0000:00/0000:00:01.0/0000:3b:00.0/infiniband/mlx5_0 --
//	    a file name containing " -> " is a symlink to the text after the arrow (the body is ignored);
//	-- netlink/1401-0300-.bin.hex --
//	    a name ending in .hex is hex-decoded (white space ignored) into the name without .hex;
//	-- root/sys/class/infiniband/ --
//	    a name ending in / is an (empty) directory.
//
// The comment (the text before the first file) must say that the fixture is synthetic and where
// each value comes from.

// UnpackTxtar writes a text archive into dir with the same safety rules as Unpack.
func UnpackTxtar(data []byte, dir string) error {
	a := txtar.Parse(data)
	if len(a.Files) == 0 {
		return fmt.Errorf("%w: text archive holds no files", ErrNotSnapshot)
	}
	for _, f := range a.Files {
		name, target, isLink := strings.Cut(f.Name, " -> ")
		isDir := strings.HasSuffix(strings.TrimSpace(name), "/")
		name, err := safeName(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		if err := checkParents(dir, name); err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if isDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if isLink {
			target = strings.TrimSpace(target)
			if err := checkLink(name, target); err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
			}
			continue
		}
		body := f.Data
		if strings.HasSuffix(name, ".hex") {
			b, err := hex.DecodeString(strings.Join(strings.Fields(string(body)), ""))
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
			}
			body, dst = b, strings.TrimSuffix(dst, ".hex")
		}
		if err := os.WriteFile(dst, body, 0o644); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		return fmt.Errorf("%w: no %s in the text archive", ErrNotSnapshot, MetaFile)
	}
	return nil
}
