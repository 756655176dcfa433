package probe

import (
	"unsafe"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// Work requests link to each other and to their SGEs by C address; all of
// them live in a verbs.Arena, outside the Go heap.

func sgeAddr(p *verbs.SGE) uintptr       { return uintptr(unsafe.Pointer(p)) }
func sendWRAddr(p *verbs.SendWR) uintptr { return uintptr(unsafe.Pointer(p)) }

func allocRecv(a *verbs.Arena) (*verbs.SGE, *verbs.RecvWR, error) {
	sge, err := verbs.New[verbs.SGE](a)
	if err != nil {
		return nil, nil, err
	}
	wr, err := verbs.New[verbs.RecvWR](a)
	return sge, wr, err
}
