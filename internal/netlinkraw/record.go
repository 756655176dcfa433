package netlinkraw

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Recorder passes requests to a connection and saves each answer in a directory (it knows no
// protocol, so RDMA netlink, devlink and ethtool netlink recordings all use it): the reply as <key>.bin, a kernel error as <key>.err holding the decimal errno. Other failures (timeouts,
// socket errors) are not recorded, so a replay reports them as not recorded rather than as
// something the kernel said.
type Recorder struct {
	conn Exchanger
	dir  string
}

// NewRecorder records conn's answers into dir, which must exist.
func NewRecorder(conn Exchanger, dir string) *Recorder {
	return &Recorder{conn: conn, dir: dir}
}

// Exchange asks the wrapped connection and records the answer. A failure to write the
// recording is returned: a snapshot silently missing replies would later read as "not
// recorded" instead of showing the host as it was.
func (r *Recorder) Exchange(req Request) ([]byte, error) {
	reply, err := r.conn.Exchange(req)
	var errno syscall.Errno
	switch {
	case err == nil:
		if werr := os.WriteFile(filepath.Join(r.dir, req.Key()+".bin"), reply, 0o644); werr != nil {
			return nil, fmt.Errorf("netlink record: %w", werr)
		}
	case errors.As(err, &errno):
		if werr := os.WriteFile(filepath.Join(r.dir, req.Key()+".err"), []byte(strconv.Itoa(int(errno))), 0o644); werr != nil {
			return nil, fmt.Errorf("netlink record: %w", werr)
		}
	}
	return reply, err
}

type replay struct {
	dir string
}

// NewReplay returns a connection that answers from a directory written by a Recorder: the
// recorded reply, or the recorded kernel error as a syscall.Errno. A request that was never
// recorded fails with an error wrapping ErrNotRecorded.
func NewReplay(dir string) Exchanger { return &replay{dir: dir} }

func (r *replay) Exchange(req Request) ([]byte, error) {
	key := req.Key()
	reply, err := readBounded(filepath.Join(r.dir, key+".bin"))
	if err == nil {
		return reply, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netlink replay of request %s: %w", key, err)
	}
	errPath := filepath.Join(r.dir, key+".err")
	b, err := readBounded(errPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netlink replay of request %s from %s: %w", key, r.dir, ErrNotRecorded)
	}
	if err != nil {
		return nil, fmt.Errorf("netlink replay of request %s: %w", key, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || n > 4095 {
		return nil, fmt.Errorf("netlink replay of request %s: %s holds %q, not an errno: %w", key, errPath, b, ErrMalformedRecording)
	}
	return nil, syscall.Errno(n)
}

// readBounded reads one recorded reply: never through a symlink, never a FIFO or device (a
// crafted snapshot could otherwise block the run or read outside it), at most MaxReplySize.
func readBounded(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file: %w", path, ErrMalformedRecording)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReplySize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxReplySize {
		return nil, fmt.Errorf("%s: larger than %d bytes: %w", path, MaxReplySize, ErrMalformedRecording)
	}
	return b, nil
}
