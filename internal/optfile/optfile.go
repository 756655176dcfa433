// Package optfile decodes and validates the operator's option files of `rdmadiag check`: the
// fleet policy (--policy), the firmware matrix additions (--matrix) and the work-request profile
// (--wr-profile). Each is read once, before any check runs, and strictly: unknown sections and
// keys, wrong types, out-of-range values and trailing data are errors that name the file, the
// key path and what was expected, because a misspelt expectation must never silently check
// nothing. The formats are documented in docs/options.md.
package optfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// MaxFileSize bounds every option file: they name boards, rows and applications, not objects,
// and a larger one is a wrong file (a snapshot, a log) given by mistake.
const MaxFileSize = 1 << 20

// Error is a file that is not what its format allows: the file, where in it (a key path such as
// `ports.by_board_id["MT_0000000838"]`, or "line 3, column 7" for a syntax error; empty for
// the file as a whole) and what was wrong.
type Error struct {
	File string
	Path string
	Msg  string
	// Err is the underlying error when there is one (a read error); errors.Is sees through.
	Err error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// readFile reads an option file on this machine (the analyst's, never the analysed host's). It
// must be a regular file: a FIFO without a writer would block the run before it starts (open(2)
// waits for a writer, fifo(7)), and a device or a socket is no option file. The file is opened
// without waiting (O_NONBLOCK, which a regular file ignores) and refused by what it is.
func readFile(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, serr := os.Stat(name); serr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(name, fi.Mode()) // a socket: ENXIO says less
		}
		return nil, readErr(name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, readErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, readErr(name, err)
	}
	if len(b) > MaxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes: not an option file", MaxFileSize)}
	}
	return b, nil
}

func notRegular(name string, m fs.FileMode) error {
	return &Error{File: name, Msg: "cannot read: " + kindOf(m) + ", not a regular file: give the option file itself"}
}

// kindOf names what a file that is not a regular one is, with its article.
func kindOf(m fs.FileMode) string {
	k := host.FileType(m)
	if m&fs.ModeNamedPipe != 0 {
		k += " (FIFO)" // the word an operator who made one with mkfifo knows
	}
	if strings.IndexByte("aeiou", k[0]) >= 0 {
		return "an " + k
	}
	return "a " + k
}

// readErr names the file once: os errors already carry the path ("open x: ..."), which would
// repeat it.
func readErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := "cannot read: " + err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		msg = "no such file"
	}
	return &Error{File: name, Msg: msg, Err: err}
}

// LoadPolicy reads and decodes a --policy file.
func LoadPolicy(name string) (*Policy, error) {
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	return DecodePolicy(b, name)
}

// LoadMatrix reads and decodes a --matrix file; knownFamily says which firmware majors the
// firmware checks know (a row for another family could never match a device).
func LoadMatrix(name string, knownFamily func(major int) bool) ([]MatrixRow, error) {
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	return DecodeMatrix(b, name, knownFamily)
}

// LoadWRProfile reads and decodes a --wr-profile file.
func LoadWRProfile(name string) (*WRProfile, error) {
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	return DecodeWRProfile(b, name)
}
