package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// ErrNotRegular refuses a FIFO, socket or device node found where a tree or snapshot should hold a
// plain file: reading one would block forever (a FIFO) or touch the analysing machine's hardware.
var ErrNotRegular = errors.New("not a regular file")

// ErrEscapes refuses a symbolic link whose target climbs above the tree's root.
var ErrEscapes = errors.New("symbolic link leaves the tree")

// ReadRegularIn reads name inside r: symlinks may not leave r (os.Root refuses them), only a
// regular file is read, and at most MaxFileSize bytes. The open is non-blocking, so a FIFO
// planted in a snapshot is refused instead of waiting for a writer. Errors name display.
func ReadRegularIn(r *os.Root, name, display string) ([]byte, error) {
	f, err := openRegularIn(r, name, display)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, display)
}

func openRegularIn(r *os.Root, name, display string) (*os.File, error) {
	return openRegular(func() (*os.File, error) { return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0) }, display)
}

// OpenRegular opens name, a file of this machine that must be a regular one (a result or a
// plan another host wrote): opened without waiting, so that a FIFO is refused by what it is
// (ErrNotRegular) instead of holding the open for a writer.
func OpenRegular(name string) (*os.File, error) {
	return openRegular(func() (*os.File, error) { return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0) }, name)
}

func openRegular(open func() (*os.File, error), display string) (*os.File, error) {
	f, err := open()
	if err != nil {
		return nil, renamePathErr(err, "open", display)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, renamePathErr(err, "stat", display)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: display, Err: fmt.Errorf("%w (%s)", ErrNotRegular, FileType(st.Mode()))}
	}
	return f, nil
}

func readLimited(f *os.File, display string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, renamePathErr(err, "read", display)
	}
	if len(b) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: display, Err: ErrTooLarge}
	}
	return b, nil
}

func renamePathErr(err error, op, display string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: display, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: display, Err: err}
}

// FileType names what a file that is not a regular one is ("named pipe", "directory"), for the
// messages that refuse it.
func FileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

// rel turns a resolved host path ("/sys/x") into a name inside the os.Root ("sys/x", "." for "/").
func rel(real string) string {
	r := strings.TrimPrefix(real, "/")
	if r == "" {
		return "."
	}
	return r
}
