package watch

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// heldFile is one small file of the tree (a port's state, a netdev's carrier) kept open and
// read again from offset 0 each poll: sysfs regenerates an attribute when it is read from 0
// (fs/seq_file.c seq_read_iter resets its iterator at offset 0, Linux 6.12), so a poll costs
// one pread and no path walk. Each file is read by its own goroutine: a read that blocks (a
// device whose driver holds a lock) holds that goroutine only, and the poll abandons it at its
// deadline and marks it stuck until it returns.
type heldFile struct {
	root *os.Root
	path string // relative to the root
	rel  string // "/" + path, for messages and identities
	req  chan struct{}
	res  chan readResult
	quit chan struct{}

	// Owned by the poll loop.
	busy      bool
	busySince time.Time
	cycle     uint64 // the poll that asked for the read in flight
	// every is how many polls apart the file is read (1, or softEvery for a software device's
	// port files, whose state its netdev's files, read every poll, already give).
	every uint64
	// due asks for a read at the next poll whatever every says (the netdev came up while the
	// port's last reading says it is not ACTIVE).
	due     bool
	stuck   bool
	last    []byte // the content last read, to tell a change without parsing
	missed  int    // failed reads in a row
	lastErr error

	// Owned by the goroutine between a request and its result.
	f   *os.File
	buf []byte
}

type readResult struct {
	n   int
	err error
}

// readAt is one poll's read; tests stand in for a device that is gone (ENODEV).
var readAt = func(f *os.File, b []byte) (int, error) { return f.ReadAt(b, 0) }

func newHeldFile(root *os.Root, path string) *heldFile {
	h := &heldFile{root: root, path: path, rel: "/" + path, req: make(chan struct{}, 1), res: make(chan readResult, 1),
		quit: make(chan struct{}), buf: make([]byte, 256)}
	go h.loop()
	return h
}

func (h *heldFile) loop() {
	for {
		select {
		case <-h.quit:
			if h.f != nil {
				h.f.Close()
			}
			return
		case <-h.req:
		}
		// Opening is part of the read: a FIFO or a hung file system blocks in open(2) too.
		if h.f == nil {
			f, err := h.root.Open(h.path)
			if err != nil {
				h.res <- readResult{err: err}
				continue
			}
			h.f = f
		}
		n, err := readAt(h.f, h.buf)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		if err != nil {
			// ENODEV: the attribute's kobject is gone (kernfs deactivated it); open anew next
			// time, which says ENOENT if it is gone for good.
			h.f.Close()
			h.f = nil
		}
		h.res <- readResult{n: n, err: err}
	}
}

// close stops the goroutine once it is idle; one blocked in a read is abandoned.
func (h *heldFile) close() { close(h.quit) }

// content is what the last successful read gave (valid until the next request).
func (h *heldFile) content(r readResult) []byte { return trimSpace(h.buf[:r.n]) }

// vanished reports whether err says the file or its device is gone, which a rescan settles.
func vanished(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) || errors.Is(err, os.ErrNotExist)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// stateNum parses the number of a port's state or phys_state ("4: ACTIVE", "5: LinkUp";
// drivers/infiniband/core/sysfs.c state_show, phys_state_show) without allocating; -1 when the
// text is not that shape.
func stateNum(b []byte) int {
	n, digits := 0, 0
	for _, c := range b {
		if c == ':' {
			if digits == 0 {
				return -1
			}
			return n
		}
		if c < '0' || c > '9' || digits > 3 {
			return -1
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return -1
}
