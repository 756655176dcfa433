package watch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// kmsgBatch is what one read of the kernel log gave, or why the follower stopped.
type kmsgBatch struct {
	recs []kmsg.Record
	// missed: the kernel overwrote records before they were read (EPIPE).
	missed bool
	err    error
}

// followKmsg follows the kernel log from its current end: /dev/kmsg opened, seeked to the end
// (devkmsg_llseek SEEK_END: "after the last record", kernel/printk/printk.c, Linux 6.12), then
// read record by record, one read(2) giving one record (Documentation/ABI/testing/dev-kmsg).
// Any other file (a test's, a FIFO) is read line by line from its start, polled at its end. It
// sends batches on out until ctx ends; the file is closed then, which wakes a blocked read of
// /dev/kmsg (it is pollable, so Go's poller parks the read instead of a thread).
func followKmsg(ctx context.Context, path string, out chan<- kmsgBatch) {
	send := func(b kmsgBatch) bool {
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	f, err := os.Open(path)
	if err != nil {
		send(kmsgBatch{err: err})
		return
	}
	context.AfterFunc(ctx, func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		send(kmsgBatch{err: fmt.Errorf("%s: %w", path, err)})
		return
	}
	if st.Mode()&os.ModeCharDevice != 0 {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			send(kmsgBatch{err: fmt.Errorf("%s: seek to the end: %w", path, err)})
			return
		}
		buf := make([]byte, 8192) // a record is at most about 1 KiB plus its dictionary
		for {
			n, err := f.Read(buf)
			switch {
			case errors.Is(err, syscall.EPIPE):
				if !send(kmsgBatch{missed: true}) {
					return
				}
				continue
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				if ctx.Err() == nil {
					send(kmsgBatch{err: fmt.Errorf("%s: %w", path, err)})
				}
				return
			}
			recs, _ := kmsg.Parse(buf[:n])
			if len(recs) > 0 && !send(kmsgBatch{recs: recs}) {
				return
			}
		}
	}
	// Line by line: a record is its header line and the dictionary lines (" KEY=value") after
	// it, so a record is sent once the next begins or the file ends for now.
	r := bufio.NewReader(f)
	var block, partial []byte
	flush := func() bool {
		if len(block) == 0 {
			return true
		}
		recs, _ := kmsg.Parse(block)
		block = block[:0]
		return len(recs) == 0 || send(kmsgBatch{recs: recs})
	}
	for {
		line, err := r.ReadBytes('\n')
		if err == nil {
			line = append(partial, line...)
			partial = partial[:0]
			if len(line) > 0 && line[0] != ' ' && !flush() {
				return
			}
			block = append(block, line...)
			continue
		}
		partial = append(partial, line...)
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, io.EOF) {
			send(kmsgBatch{err: fmt.Errorf("%s: %w", path, err)})
			return
		}
		if !flush() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
