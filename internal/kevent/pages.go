package kevent

import (
	"os"
	"syscall"
	"unsafe"
)

// DropEmbeddedPages lets the kernel drop the resident pages of the table files compiled into
// the binary (madvise(2) MADV_DONTNEED on their part of the executable's read-only mapping).
// Loading the table reads every file whole, once; afterwards a run reads only the entries its
// log's lines match, whose pages fault back in from the executable. For a process that runs
// for months (watch) that is several MiB of the binary no longer resident. Best effort: an
// error leaves the pages where they are.
func DropEmbeddedPages() {
	for _, f := range embedded() {
		dropPages(f.text)
	}
}

// dropPages advises the whole pages inside s, never one it shares with other data.
func dropPages(s string) {
	if len(s) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	p := unsafe.Pointer(unsafe.StringData(s))
	start := uintptr(p)
	first := (start + page - 1) &^ (page - 1)
	end := (start + uintptr(len(s))) &^ (page - 1)
	if end <= first {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, first-start)), end-first), syscall.MADV_DONTNEED)
}
