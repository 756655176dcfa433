package nldev

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/host"
)

// TestDialRDMA runs against whatever kernel the tests run on. Without RDMA (as on the build
// host, where socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA) fails with EPROTONOSUPPORT) Dial must
// fail cleanly with the errno; with RDMA the device dump must work.
func TestDialRDMA(t *testing.T) {
	c, err := Dial()
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) || !strings.Contains(err.Error(), "NETLINK_RDMA") {
			t.Fatalf("Dial: %v, want an errno naming NETLINK_RDMA", err)
		}
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			t.Logf("kernel has no RDMA netlink: %v", err)
		}
		return
	}
	defer c.Close()
	devs, err := NewClient(c).Devices()
	if err != nil {
		t.Fatalf("live device dump: %v", err)
	}
	t.Logf("live RDMA devices: %+v", devs)
}

// The exchange logic does not depend on the protocol, so NETLINK_ROUTE, which every Linux test
// machine has, drives the real socket path: dumps to NLMSG_DONE, kernel errors, acks, timeouts
// and stale replies.

const (
	rtmGetLink = 18
	rtmNewLink = 16
)

func routeConn(t *testing.T, timeout time.Duration) *SocketConn {
	t.Helper()
	c, err := dial(unix.NETLINK_ROUTE, "NETLINK_ROUTE", timeout)
	if err != nil {
		t.Skipf("no NETLINK_ROUTE socket: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ifinfomsg for RTM_GETLINK: family, pad, type, index, flags, change.
func ifinfo(index int32) []byte {
	b := make([]byte, 16)
	ne.PutUint32(b[4:], uint32(index))
	return b
}

type rawMsg struct {
	h       header
	payload []byte
}

func splitMessages(t *testing.T, b []byte) []rawMsg {
	t.Helper()
	var out []rawMsg
	for off := 0; off < len(b); {
		h, size, err := parseHeader(b[off:])
		if err != nil {
			t.Fatalf("reply at %d: %v", off, err)
		}
		out = append(out, rawMsg{h, b[off+nlmsgHdrLen : off+h.len]})
		off += size
	}
	return out
}

func TestExchangeDumpEndsWithDone(t *testing.T) {
	c := routeConn(t, time.Second)
	for round := 0; round < 2; round++ {
		b, err := c.Exchange(host.Request{Type: rtmGetLink, Flags: NLMFDump, Payload: ifinfo(0)})
		if err != nil {
			t.Fatal(err)
		}
		msgs := splitMessages(t, b)
		if len(msgs) < 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		for i, m := range msgs {
			if m.h.seq != c.seq || m.h.pid != c.portID {
				t.Errorf("message %d has seq %d pid %d, want %d %d", i, m.h.seq, m.h.pid, c.seq, c.portID)
			}
			last := i == len(msgs)-1
			if (m.h.typ == nlmsgDone) != last {
				t.Errorf("message %d of %d has type %d", i, len(msgs), m.h.typ)
			}
			if !last && (m.h.typ != rtmNewLink || m.h.flags&NLMFMulti == 0) {
				t.Errorf("message %d: type %d flags %#x", i, m.h.typ, m.h.flags)
			}
		}
		if !strings.Contains(string(b), "lo\x00") {
			t.Error("link dump does not mention lo")
		}
	}
}

func TestExchangeKernelErrorIsBareErrno(t *testing.T) {
	c := routeConn(t, time.Second)
	_, err := c.Exchange(host.Request{Type: rtmGetLink, Payload: ifinfo(0x7ffffff0)})
	if e, ok := err.(syscall.Errno); !ok || e != syscall.ENODEV {
		t.Fatalf("GETLINK of a missing ifindex: %v (%T), want bare ENODEV", err, err)
	}
}

func TestExchangeSingleReplyAndAck(t *testing.T) {
	c := routeConn(t, time.Second)
	b, err := c.Exchange(host.Request{Type: rtmGetLink, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := splitMessages(t, b); len(msgs) != 1 || msgs[0].h.typ != rtmNewLink {
		t.Fatalf("doit reply: %+v", msgs)
	}
	b, err = c.Exchange(host.Request{Type: rtmGetLink, Flags: NLMFAck, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := splitMessages(t, b)
	if len(msgs) != 2 || msgs[0].h.typ != rtmNewLink || msgs[1].h.typ != nlmsgError || ne.Uint32(msgs[1].payload) != 0 {
		t.Fatalf("doit with ack: %+v", msgs)
	}
}

func TestExchangeTimesOutAndDropsStaleReplies(t *testing.T) {
	c := routeConn(t, 200*time.Millisecond)
	// The kernel answers NLMSG_NOOP only when asked for an ack, so this waits for nothing.
	start := time.Now()
	_, err := c.Exchange(host.Request{Type: nlmsgNoop})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("unanswered request: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %v", d)
	}
	// Leave a whole dump unread under an old sequence number, as a timed-out exchange would.
	stale := make([]byte, 32)
	ne.PutUint32(stale, 32)
	ne.PutUint16(stale[4:], rtmGetLink)
	ne.PutUint16(stale[6:], NLMFRequest|NLMFDump)
	ne.PutUint32(stale[8:], 999999)
	ne.PutUint32(stale[12:], c.portID)
	if err := unix.Sendto(c.fd, stale, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Exchange(host.Request{Type: rtmGetLink, Flags: NLMFAck, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range splitMessages(t, b) {
		if m.h.seq != c.seq {
			t.Errorf("reply holds a message of sequence %d", m.h.seq)
		}
	}
}

func TestExchangeAfterClose(t *testing.T) {
	c := routeConn(t, time.Second)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Exchange(host.Request{Type: rtmGetLink}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Exchange after Close: %v", err)
	}
}

func TestDialRejectsNonPositiveTimeout(t *testing.T) {
	if _, err := DialTimeout(0); err == nil {
		t.Error("DialTimeout(0) succeeded")
	}
}
