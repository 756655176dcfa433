package verbs

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

func TestOpenMissingLibrary(t *testing.T) {
	const missing = "libibverbs-missing-for-test.so.1"
	l, err := Open(missing)
	if err == nil {
		t.Fatalf("Open(%q) = %v, want an error", missing, l)
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Errorf("errors.Is(%v, ErrNoLibrary) = false", err)
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("error %T is not a *LoadError", err)
	}
	for _, want := range []string{missing, "libibverbs1", "cannot open shared object file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if le.Remedy() == "" {
		t.Error("LoadError has no remedy")
	}
}

// TestNoDevice runs where libibverbs is installed but the kernel has no RDMA
// (this project's build hosts): ibv_get_device_list must fail with ENOSYS
// and the error must say what that means.
func TestNoDevice(t *testing.T) {
	l, err := Load()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI installs libibverbs, but loading it failed: %v", err)
		}
		t.Skipf("libibverbs not installed: %v", err)
	}
	if _, err := os.Stat("/sys/class/infiniband_verbs/abi_version"); err == nil {
		t.Skip("this kernel has RDMA user verbs; the no-device path cannot be exercised")
	}
	devs, err := l.Devices()
	if err == nil {
		t.Fatalf("Devices() = %v, want an error on a kernel without RDMA", devs)
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("errors.Is(%v, ErrNoDevice) = false", err)
	}
	if !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("errors.Is(%v, ENOSYS) = false: errno was not captured", err)
	}
	for _, want := range []string{"ibv_get_device_list", "ENOSYS", "no RDMA user-verbs support", "ib_uverbs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := l.OpenDevice("rxe0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("OpenDevice(rxe0) error = %v, want ErrNoDevice", err)
	}
}

// TestErrnoCapture checks the errno path on a libc call with a known
// failure, from many goroutines at once so that a read of another thread's
// errno would show up.
func TestErrnoCapture(t *testing.T) {
	errnoLoc, err := purego.Dlsym(purego.RTLD_DEFAULT, "__errno_location")
	if err != nil {
		t.Fatal(err)
	}
	closeFn, err := purego.Dlsym(purego.RTLD_DEFAULT, "close")
	if err != nil {
		t.Fatal(err)
	}
	getpid, err := purego.Dlsym(purego.RTLD_DEFAULT, "getpid")
	if err != nil {
		t.Fatal(err)
	}
	l := &Lib{errnoLoc: errnoLoc}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if r, e := l.call(closeFn, ^uintptr(0)); int32(r) != -1 || e != syscall.EBADF {
					errs <- "close(-1) = " + e.Error()
					return
				}
				// A successful call must report errno 0, not a stale EBADF.
				if _, e := l.call(getpid); e != 0 {
					errs <- "getpid errno = " + e.Error()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestArena(t *testing.T) {
	a, err := NewArena(256)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	wr, err := New[SendWR](a)
	if err != nil {
		t.Fatal(err)
	}
	if unsafePointer(wr)%8 != 0 {
		t.Errorf("SendWR at %p is not 8-byte aligned", wr)
	}
	wr.WRID = 7
	if _, err := New[SendWR](a); err != nil {
		t.Fatalf("second 128-byte WR in a 4 KiB mapping: %v", err)
	}
	if _, err := NewSlice[WC](a, 1<<20); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Errorf("oversized allocation error = %v, want exhausted", err)
	}
	a.Reset()
	again, err := New[SendWR](a)
	if err != nil {
		t.Fatal(err)
	}
	if again.WRID != 0 {
		t.Errorf("Reset did not zero memory: WRID=%d", again.WRID)
	}
	if _, err := NewMem(0); err == nil {
		t.Error("NewMem(0) succeeded")
	}
	m, err := NewMem(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
}

func TestNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{WCStatusName(0), "IBV_WC_SUCCESS"},
		{WCStatusName(12), "IBV_WC_RETRY_EXC_ERR"},
		{WCStatusName(99), "IBV_WC_STATUS_99"},
		{EventName(EventCQErr), "IBV_EVENT_CQ_ERR"},
		{EventName(200), "IBV_EVENT_200"},
		{PortStateName(PortActive), "ACTIVE"},
		{QPStateName(QPStateErr), "ERR"},
		{ErrnoName(syscall.EINVAL), "EINVAL"},
		{ErrnoName(syscall.Errno(4000)), "errno 4000"},
		{(&Error{Verb: "ibv_create_qp", Object: "rxe0", Errno: syscall.EINVAL}).Error(), "ibv_create_qp on rxe0: EINVAL (invalid argument)"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if err := (&Error{Verb: "x", Errno: syscall.ENOMEM}); !errors.Is(err, syscall.ENOMEM) {
		t.Error("verbs.Error does not unwrap to its errno")
	}
}

func unsafePointer[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }
