package netlinkraw

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The exchange logic does not depend on the protocol, so NETLINK_ROUTE, which every Linux test
// machine has, drives the real socket path: dumps to NLMSG_DONE, kernel errors, acks, timeouts
// and stale replies.

const (
	rtmGetLink = 18
	rtmNewLink = 16
)

func routeConn(t *testing.T, timeout time.Duration) *Conn {
	t.Helper()
	c, err := Dial(unix.NETLINK_ROUTE, "NETLINK_ROUTE", "test", timeout)
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
	h       Header
	payload []byte
}

func splitMessages(t *testing.T, b []byte) []rawMsg {
	t.Helper()
	var out []rawMsg
	for off := 0; off < len(b); {
		h, size, err := ParseHeader(b[off:])
		if err != nil {
			t.Fatalf("reply at %d: %v", off, err)
		}
		out = append(out, rawMsg{h, b[off+HdrLen : off+h.Len]})
		off += size
	}
	return out
}

func TestExchangeDumpEndsWithDone(t *testing.T) {
	c := routeConn(t, time.Second)
	for round := 0; round < 2; round++ {
		b, err := c.Exchange(Request{Type: rtmGetLink, Flags: FlagDump, Payload: ifinfo(0)})
		if err != nil {
			t.Fatal(err)
		}
		msgs := splitMessages(t, b)
		if len(msgs) < 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		for i, m := range msgs {
			if m.h.Seq != c.seq || m.h.PortID != c.portID {
				t.Errorf("message %d has seq %d pid %d, want %d %d", i, m.h.Seq, m.h.PortID, c.seq, c.portID)
			}
			last := i == len(msgs)-1
			if (m.h.Type == MsgDone) != last {
				t.Errorf("message %d of %d has type %d", i, len(msgs), m.h.Type)
			}
			if !last && (m.h.Type != rtmNewLink || m.h.Flags&FlagMulti == 0) {
				t.Errorf("message %d: type %d flags %#x", i, m.h.Type, m.h.Flags)
			}
		}
		if !strings.Contains(string(b), "lo\x00") {
			t.Error("link dump does not mention lo")
		}
	}
}

func TestExchangeKernelErrorIsBareErrno(t *testing.T) {
	c := routeConn(t, time.Second)
	_, err := c.Exchange(Request{Type: rtmGetLink, Payload: ifinfo(0x7ffffff0)})
	if e, ok := err.(syscall.Errno); !ok || e != syscall.ENODEV {
		t.Fatalf("GETLINK of a missing ifindex: %v (%T), want bare ENODEV", err, err)
	}
}

func TestExchangeSingleReplyAndAck(t *testing.T) {
	c := routeConn(t, time.Second)
	b, err := c.Exchange(Request{Type: rtmGetLink, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := splitMessages(t, b); len(msgs) != 1 || msgs[0].h.Type != rtmNewLink {
		t.Fatalf("doit reply: %+v", msgs)
	}
	b, err = c.Exchange(Request{Type: rtmGetLink, Flags: FlagAck, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := splitMessages(t, b)
	if len(msgs) != 2 || msgs[0].h.Type != rtmNewLink || msgs[1].h.Type != MsgError || ne.Uint32(msgs[1].payload) != 0 {
		t.Fatalf("doit with ack: %+v", msgs)
	}
}

func TestExchangeTimesOutAndDropsStaleReplies(t *testing.T) {
	c := routeConn(t, 200*time.Millisecond)
	// The kernel answers NLMSG_NOOP only when asked for an ack, so this waits for nothing.
	start := time.Now()
	_, err := c.Exchange(Request{Type: MsgNoop})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("unanswered request: %v, want a deadline error", err)
	}
	if !strings.HasPrefix(err.Error(), "test request ") {
		t.Errorf("error %q does not carry the connection's label", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %v", d)
	}
	// Leave a whole dump unread under an old sequence number, as a timed-out exchange would.
	stale := make([]byte, 32)
	ne.PutUint32(stale, 32)
	ne.PutUint16(stale[4:], rtmGetLink)
	ne.PutUint16(stale[6:], FlagRequest|FlagDump)
	ne.PutUint32(stale[8:], 999999)
	ne.PutUint32(stale[12:], c.portID)
	if err := unix.Sendto(c.fd, stale, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Exchange(Request{Type: rtmGetLink, Flags: FlagAck, Payload: ifinfo(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range splitMessages(t, b) {
		if m.h.Seq != c.seq {
			t.Errorf("reply holds a message of sequence %d", m.h.Seq)
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
	if _, err := c.Exchange(Request{Type: rtmGetLink}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Exchange after Close: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	if _, err := Dial(unix.NETLINK_ROUTE, "NETLINK_ROUTE", "test", 0); err == nil {
		t.Error("zero timeout accepted")
	}
	// Protocol 31 is past MAX_LINKS - 1 on every kernel: the socket call itself fails.
	_, err := Dial(32, "PROTO32", "test", time.Second)
	var errno syscall.Errno
	if err == nil || !errors.As(err, &errno) || !strings.Contains(err.Error(), "test: open PROTO32 socket") {
		t.Errorf("Dial of a protocol the kernel lacks: %v", err)
	}
}

func TestParseHeader(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
		size int
	}{
		{"short", make([]byte, 15), false, 0},
		{"len below header", append(ne.AppendUint32(nil, 8), make([]byte, 12)...), false, 0},
		{"len past end", append(ne.AppendUint32(nil, 40), make([]byte, 12)...), false, 0},
		{"unaligned last", append(ne.AppendUint32(nil, 18), make([]byte, 14)...), true, 18},
		{"aligned", append(ne.AppendUint32(nil, 18), make([]byte, 18)...), true, 20},
	} {
		_, size, err := ParseHeader(c.b)
		if (err == nil) != c.ok || size != c.size {
			t.Errorf("%s: size %d err %v", c.name, size, err)
		}
		if err != nil && !errors.Is(err, ErrFraming) {
			t.Errorf("%s: %v is not ErrFraming", c.name, err)
		}
	}
}
