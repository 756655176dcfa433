// Package verbs is a minimal run-time binding to libibverbs: it dlopens
// libibverbs.so.1 through purego, so building needs neither rdma-core headers
// nor a C toolchain and a binary runs on hosts without rdma-core.
//
// Every object the binding hands out (Context, PD, MR, CQ, QP) wraps memory
// owned by libibverbs; memory the device reads or writes (buffers, work
// requests, attribute structs) lives in Mem/Arena regions mapped outside the
// Go heap.
package verbs

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Soname is the library the binding loads; rdma-core has kept this ABI
// version since 2006.
const Soname = "libibverbs.so.1"

// installHint tells an operator how to get the library.
const installHint = "install rdma-core's verbs library (Debian/Ubuntu: apt install libibverbs1 ibverbs-providers; " +
	"RHEL/Fedora/SUSE: dnf or zypper install libibverbs)"

// ErrNoLibrary reports that libibverbs could not be loaded or lacks a verb.
var ErrNoLibrary = errors.New("libibverbs is not available")

// ErrNoDevice reports that libibverbs is present but the kernel exposes no
// usable RDMA device (or not the one asked for).
var ErrNoDevice = errors.New("no RDMA device")

// LoadError says which library or symbol was missing and how to fix it.
type LoadError struct {
	File   string // soname or path given to dlopen
	Symbol string // empty when dlopen itself failed
	Detail string // dlerror() text
}

func (e *LoadError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("%s has no symbol %s (%s): rdma-core is too old; %s", e.File, e.Symbol, e.Detail, installHint)
	}
	return fmt.Sprintf("cannot load %s (%s); %s", e.File, e.Detail, installHint)
}

// Remedy is the operator action that fixes the error.
func (e *LoadError) Remedy() string { return installHint }

// Is makes errors.Is(err, ErrNoLibrary) true for every LoadError.
func (e *LoadError) Is(target error) bool { return target == ErrNoLibrary }

// Lib is a loaded libibverbs. It is safe for concurrent use; libibverbs
// itself is thread safe.
type Lib struct {
	file     string
	handle   uintptr
	errnoLoc uintptr // libc __errno_location

	getDeviceList   uintptr
	freeDeviceList  uintptr
	openDevice      uintptr
	closeDevice     uintptr
	queryDevice     uintptr
	queryPortCompat uintptr // exported ibv_query_port: fallback when the extended op is absent
	queryGID        uintptr
	queryGIDTable   uintptr // optional (IBVERBS_1.11)
	allocPD         uintptr
	deallocPD       uintptr
	regMR           uintptr
	deregMR         uintptr
	createCQ        uintptr
	destroyCQ       uintptr
	createQP        uintptr
	destroyQP       uintptr
	modifyQP        uintptr
	queryQP         uintptr
	getAsyncEvent   uintptr
	ackAsyncEvent   uintptr
	wcStatusStr     uintptr
	eventTypeStr    uintptr
}

// File is the soname or path the library was loaded from.
func (l *Lib) File() string { return l.file }

var defaultLib struct {
	once sync.Once
	lib  *Lib
	err  error
}

// Load loads libibverbs.so.1 once per process: dlopen handles are process
// wide, so a second handle would only add a reference count.
func Load() (*Lib, error) {
	defaultLib.once.Do(func() { defaultLib.lib, defaultLib.err = Open(Soname) })
	return defaultLib.lib, defaultLib.err
}

// Open loads the given soname or path without caching. Tests use it to point
// the loader at a library that does not exist.
func Open(file string) (*Lib, error) {
	h, err := purego.Dlopen(file, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, &LoadError{File: file, Detail: err.Error()}
	}
	l := &Lib{file: file, handle: h}
	// purego does not surface errno on Linux, so the binding reads it itself.
	if l.errnoLoc, err = purego.Dlsym(purego.RTLD_DEFAULT, "__errno_location"); err != nil {
		_ = purego.Dlclose(h)
		return nil, &LoadError{File: "libc", Symbol: "__errno_location", Detail: err.Error()}
	}
	// Unversioned dlsym resolves each verb to its default (@@) version; some
	// verbs exist only in IBVERBS_1.0, so pinning one version would break.
	required := []struct {
		dst  *uintptr
		name string
	}{
		{&l.getDeviceList, "ibv_get_device_list"},
		{&l.freeDeviceList, "ibv_free_device_list"},
		{&l.openDevice, "ibv_open_device"},
		{&l.closeDevice, "ibv_close_device"},
		{&l.queryDevice, "ibv_query_device"},
		{&l.queryPortCompat, "ibv_query_port"},
		{&l.queryGID, "ibv_query_gid"},
		{&l.allocPD, "ibv_alloc_pd"},
		{&l.deallocPD, "ibv_dealloc_pd"},
		{&l.regMR, "ibv_reg_mr"},
		{&l.deregMR, "ibv_dereg_mr"},
		{&l.createCQ, "ibv_create_cq"},
		{&l.destroyCQ, "ibv_destroy_cq"},
		{&l.createQP, "ibv_create_qp"},
		{&l.destroyQP, "ibv_destroy_qp"},
		{&l.modifyQP, "ibv_modify_qp"},
		{&l.queryQP, "ibv_query_qp"},
		{&l.getAsyncEvent, "ibv_get_async_event"},
		{&l.ackAsyncEvent, "ibv_ack_async_event"},
		{&l.wcStatusStr, "ibv_wc_status_str"},
		{&l.eventTypeStr, "ibv_event_type_str"},
	}
	for _, s := range required {
		p, err := purego.Dlsym(h, s.name)
		if err != nil {
			_ = purego.Dlclose(h)
			return nil, &LoadError{File: file, Symbol: s.name, Detail: err.Error()}
		}
		*s.dst = p
	}
	// Present since rdma-core 32; without it GIDs are read one by one.
	l.queryGIDTable, _ = purego.Dlsym(h, "_ibv_query_gid_table")
	return l, nil
}

// cptr turns an address returned by C into a pointer. The address is never
// in the Go heap, so the garbage collector has nothing to track; the
// indirection keeps go vet's uintptr-conversion check meaningful for the
// rest of the package.
func cptr(u uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&u)) }

// call invokes a C function whose failure is reported through errno. errno
// is thread local and purego does not return it on Linux, so the goroutine
// is pinned to its OS thread while errno is cleared, the verb runs, and
// errno is read back.
//
//go:uintptrescapes
func (l *Lib) call(fn uintptr, args ...uintptr) (uintptr, syscall.Errno) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	loc, _, _ := purego.SyscallN(l.errnoLoc)
	*(*int32)(cptr(loc)) = 0
	r, _, _ := purego.SyscallN(fn, args...)
	loc, _, _ = purego.SyscallN(l.errnoLoc)
	return r, syscall.Errno(*(*int32)(cptr(loc)))
}

// callRet invokes a C function that returns 0 or an errno value (or a
// negative errno), the convention of modify/query/destroy and the data path.
//
//go:uintptrescapes
func callRet(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// cstring copies a NUL-terminated C string.
func cstring(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(cptr(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cbytes returns the NUL-terminated prefix of a fixed char array.
func cbytes(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// WCStatusString is libibverbs' name for a work-completion status.
func (l *Lib) WCStatusString(status uint32) string {
	r, _, _ := purego.SyscallN(l.wcStatusStr, uintptr(status))
	return cstring(r)
}

// EventTypeString is libibverbs' name for an async event type.
func (l *Lib) EventTypeString(t uint32) string {
	r, _, _ := purego.SyscallN(l.eventTypeStr, uintptr(t))
	return cstring(r)
}
