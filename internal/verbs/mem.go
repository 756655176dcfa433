package verbs

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mem is an anonymous private mapping outside the Go heap. Registered
// buffers must stay put while the device may DMA into them, and structs that
// C keeps pointers to must not contain Go pointers; both hold for a mapping
// the Go runtime does not manage.
type Mem struct {
	b []byte
}

// NewMem maps n bytes (rounded up to whole pages), zeroed.
func NewMem(n int) (*Mem, error) {
	if n <= 0 {
		return nil, fmt.Errorf("map %d bytes: size must be positive", n)
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", n, err)
	}
	return &Mem{b: b}, nil
}

// Bytes is the mapping as a slice; it is invalid after Free.
func (m *Mem) Bytes() []byte { return m.b }

// Addr is the address of the first byte, as the device sees it.
func (m *Mem) Addr() uintptr { return uintptr(unsafe.Pointer(&m.b[0])) }

// Len is the mapping's length.
func (m *Mem) Len() int { return len(m.b) }

// Free unmaps the memory. It is idempotent.
func (m *Mem) Free() error {
	if m == nil || m.b == nil {
		return nil
	}
	b := m.b
	m.b = nil
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("unmap %d bytes: %w", len(b), err)
	}
	return nil
}

// Arena is a bump allocator over a Mem for small structs handed to C:
// attribute structs, work requests, scatter/gather lists, completion arrays.
type Arena struct {
	m   *Mem
	off uintptr
}

// NewArena maps an arena of n bytes.
func NewArena(n int) (*Arena, error) {
	m, err := NewMem(n)
	if err != nil {
		return nil, fmt.Errorf("arena: %w", err)
	}
	return &Arena{m: m}, nil
}

// Free unmaps the arena; everything allocated from it becomes invalid.
func (a *Arena) Free() error { return a.m.Free() }

// Reset makes the whole arena available again, zeroed.
func (a *Arena) Reset() {
	clear(a.m.b[:a.off])
	a.off = 0
}

func (a *Arena) alloc(size, align uintptr) (unsafe.Pointer, error) {
	off := (a.off + align - 1) &^ (align - 1)
	if off+size > uintptr(len(a.m.b)) || size == 0 {
		return nil, fmt.Errorf("arena of %d bytes exhausted (need %d more at %d)", len(a.m.b), size, off)
	}
	a.off = off + size
	return unsafe.Pointer(&a.m.b[off]), nil
}

// New allocates one zeroed T in the arena. T must contain no Go pointers.
func New[T any](a *Arena) (*T, error) {
	var z T
	p, err := a.alloc(unsafe.Sizeof(z), unsafe.Alignof(z))
	if err != nil {
		return nil, err
	}
	return (*T)(p), nil
}

// NewSlice allocates n zeroed Ts in the arena. T must contain no Go pointers.
func NewSlice[T any](a *Arena, n int) ([]T, error) {
	var z T
	if n <= 0 {
		return nil, fmt.Errorf("arena: slice of %d elements", n)
	}
	p, err := a.alloc(unsafe.Sizeof(z)*uintptr(n), unsafe.Alignof(z))
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(p), n), nil
}
