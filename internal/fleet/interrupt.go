package fleet

import (
	"context"
	"io"
	"os"
)

// The inputs fleet reads can block without end: standard input from a pipe or a terminal, a FIFO
// whose writer has not opened it yet (open(2) itself waits, fifo(7)). A signal must still end the
// run at once, so such opens and reads run beside the reader and are left behind when the
// run's context ends (the process exits right after). Regular files are read directly.

// openInput opens p, giving up when ctx ends first.
func openInput(ctx context.Context, p string) (io.ReadCloser, error) {
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return os.Open(p)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(p)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, o.err
		}
		return interruptible(ctx, o.f), nil
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// interruptible wraps rc so that a Read blocked in it returns when ctx ends, with the context's
// cause; a regular file is returned as it is.
func interruptible(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	if regular(rc) {
		return rc
	}
	return &ctxReader{ctx: ctx, rc: rc, done: make(chan readResult, 1)}
}

// regular reports whether r is a regular file, whose reads end on their own.
func regular(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// ctxReader reads into its own buffer on another goroutine, so that an abandoned read writes
// into nothing the caller holds.
type ctxReader struct {
	ctx     context.Context
	rc      io.ReadCloser
	buf     []byte
	left    []byte // read but not yet returned
	pending bool
	done    chan readResult
	err     error
}

type readResult struct {
	n   int
	err error
}

const ctxReadSize = 64 << 10

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.left) > 0 {
		n := copy(p, c.left)
		c.left = c.left[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		c.err = context.Cause(c.ctx)
		return 0, c.err
	}
	if !c.pending {
		if c.buf == nil {
			c.buf = make([]byte, ctxReadSize)
		}
		c.pending = true
		go func() {
			n, err := c.rc.Read(c.buf)
			c.done <- readResult{n, err}
		}()
	}
	select {
	case r := <-c.done:
		c.pending = false
		c.left = c.buf[:r.n]
		n := copy(p, c.left)
		c.left = c.left[n:]
		if r.err != nil {
			c.err = r.err
			if len(c.left) > 0 {
				return n, nil // the error comes after what is left
			}
		}
		return n, r.err
	case <-c.ctx.Done():
		c.err = context.Cause(c.ctx)
		return 0, c.err
	}
}

// Close closes the input unless a read is still blocked in it: closing a file does not end a
// read(2) already waiting on it, and the goroutine reading would then race with the close.
func (c *ctxReader) Close() error {
	if c.pending {
		return nil
	}
	return c.rc.Close()
}
