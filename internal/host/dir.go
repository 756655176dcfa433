package host

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir reads many files of one directory of sysfs text attributes. On the live machine it holds the directory open and
// opens each file relative to it: a RoCE port's GID table is 256-1024 files of one directory
// under /sys/class's symlink, and walking that path again for each cost more than the read
// (docs/speed.md). A tree or snapshot reads each through the host as ReadFile does, confined.
type Dir struct {
	h    *Host
	path string
	fd   int    // -1 unless a live host opened the directory
	end  func() // ends the one read-in-progress record that covers all of the directory's reads
}

// OpenDir prepares reads in directory p; Close releases it. It does not fail: a directory that
// cannot be opened gives each read the error ReadFile would.
func (h *Host) OpenDir(p string) *Dir {
	d := &Dir{h: h, path: p, fd: -1}
	if h.fsroot != nil || len(h.readErrs) > 0 {
		return d
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(h.Path(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err == nil {
		d.fd = fd
		// One record for the whole directory, not one per file: a GID table is a thousand
		// reads, and a read that blocks is still named by its directory after a deadline.
		d.end = h.begin("read files of " + p)
	}
	return d
}

// Close releases the directory.
func (d *Dir) Close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
		d.end()
	}
}

// ReadFile reads file name of the directory, with ReadFile's limits, errors and observation.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	p := path.Join(d.path, name)
	if d.fd < 0 || name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return d.h.ReadFile(p)
	}
	b, err := readLiveAt(d.fd, name, p, true)
	if d.h.obs != nil {
		d.h.obs.FileRead(p, b, err)
	}
	return b, err
}

// ReadString is ReadFile trimmed of surrounding white space, as Host.ReadString.
func (d *Dir) ReadString(name string) (string, error) {
	b, err := d.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
