package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// checkOutputPath refuses, before anything is read, an --output that can never be written: its
// directory missing or not a directory, or the path itself a directory.
func checkOutputPath(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return usageErr("--output %s: directory %s: %v", path, dir, errors.Unwrap(err))
	case !st.IsDir():
		return usageErr("--output %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErr("--output %s: is a directory; name a file in it", path)
	}
	return nil
}

// writeFileAtomic replaces path with data so that a reader (node_exporter scraping the textfile
// directory) sees the old file or the new one, never a part: the data goes to a temporary file in
// the same directory (a rename is atomic only within one file system), is synced, and is renamed
// over path. The temporary name ends in ".tmp", so the textfile collector, which reads "*.prom",
// never picks it up; on any error it is removed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; readers such as node_exporter run as another user.
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename itself is durable once the directory is synced; a failure here leaves a
	// complete file, so it is not reported.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
