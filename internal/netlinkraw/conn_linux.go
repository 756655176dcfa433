// Package netlinkraw is a netlink socket that returns the kernel's replies as raw bytes: every
// message of an answer, concatenated as received (headers, padding and NLMSG_DONE included). The
// RDMA (nldev) and generic netlink (devlink) clients share it, so that both can record the exact
// bytes a snapshot stores and decode live and recorded answers through the same code.
//
// It is built on golang.org/x/sys/unix rather than vishvananda/netlink's nl package:
// nl.NetlinkSocket.Receive returns parsed syscall.NetlinkMessages, which loses the exact bytes
// (alignment padding, message boundaries) a recording must keep, and it neither detects
// truncated datagrams nor exposes the raw receive path.
package netlinkraw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultTimeout bounds each receive on a live socket: a kernel that stops answering (a wedged
// driver holding the device lock during a dump) must not hang the diagnosis.
const DefaultTimeout = 5 * time.Second

// MaxReplySize bounds the bytes one reply may have. A host with a million QPs replies with
// roughly 100 MiB; more than this is a runaway dump, not a host.
const MaxReplySize = 512 << 20

// recvBufSize is the initial receive buffer. The kernel sizes dump chunks to the largest
// buffer the reader has offered, up to 32 KiB; a datagram larger than the buffer is detected
// with MSG_PEEK|MSG_TRUNC and the buffer grown instead of silently truncating.
const recvBufSize = 64 << 10

// Netlink header constants (include/uapi/linux/netlink.h).
const (
	HdrLen = 16

	MsgNoop    = 1
	MsgError   = 2
	MsgDone    = 3
	MsgOverrun = 4

	FlagRequest = 0x1
	FlagMulti   = 0x2
	FlagAck     = 0x4
	FlagDump    = 0x300
)

// ne is the byte order of netlink headers: the host's.
var ne = binary.NativeEndian

// Conn is a live netlink socket of one protocol. It is safe for concurrent use; exchanges are
// serialised.
type Conn struct {
	mu      sync.Mutex
	label   string
	fd      int
	portID  uint32
	seq     uint32
	timeout time.Duration
	buf     []byte
}

var _ Exchanger = (*Conn)(nil)

// Dial opens a netlink socket of protocol proto (unix.NETLINK_GENERIC, 20 for NETLINK_RDMA...).
// protoName names the protocol in errors ("NETLINK_RDMA"); label prefixes every error of the
// connection ("nldev", "devlink") so that a failure says which client it belongs to. On a kernel
// without the protocol the error wraps EPROTONOSUPPORT.
func Dial(proto int, protoName, label string, timeout time.Duration) (*Conn, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("%s: receive timeout %v must be positive", label, timeout)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s socket: %w", label, protoName, err)
	}
	c := &Conn{label: label, fd: fd, timeout: timeout, buf: make([]byte, recvBufSize)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: set up %s socket: %w", label, protoName, err)
	}
	return c, nil
}

func (c *Conn) setup() error {
	tv := unix.NsecToTimeval(c.timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_SNDTIMEO: %w", err)
	}
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	nsa, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return fmt.Errorf("getsockname returned %T, not a netlink address", sa)
	}
	// Replies carry the port id the kernel assigned at bind; checking it (with the sequence
	// number) drops leftovers of an exchange that timed out.
	c.portID = nsa.Pid
	return nil
}

// Close releases the socket. Later exchanges fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// Exchange sends req with NLM_F_REQUEST added and returns every reply message for it,
// concatenated as received. It reads until NLMSG_DONE for a dump, until the acknowledgement
// when req asks for one, and otherwise until the first message that is not part of a multipart
// reply (or the NLMSG_DONE that ends one: devlink's health diagnose answers a plain request
// with NLM_F_MULTI messages and NLMSG_DONE).
func (c *Conn) Exchange(req Request) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, err := c.exchange(req)
	// exchange returns kernel errnos bare and wraps every other error, so a type check suffices.
	if _, kernel := err.(unix.Errno); err != nil && !kernel {
		return nil, fmt.Errorf("%s request %s: %w", c.label, req.Key(), err)
	}
	// A kernel error stays a bare errno, as Exchanger promises, so that recorders and
	// callers can store and compare it.
	return out, err
}

func (c *Conn) exchange(req Request) ([]byte, error) {
	if c.fd < 0 {
		return nil, errors.New("socket closed")
	}
	c.seq++
	seq := c.seq
	flags := req.Flags | FlagRequest
	msg := make([]byte, HdrLen+len(req.Payload))
	ne.PutUint32(msg, uint32(len(msg)))
	ne.PutUint16(msg[4:], req.Type)
	ne.PutUint16(msg[6:], flags)
	ne.PutUint32(msg[8:], seq)
	ne.PutUint32(msg[12:], c.portID)
	copy(msg[HdrLen:], req.Payload)
	if err := retryEINTR(func() error { return unix.Sendto(c.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}) }); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}

	dump := flags&FlagDump != 0
	wantAck := flags&FlagAck != 0
	var out []byte
	for {
		dgram, err := c.recv()
		if err != nil {
			return nil, err
		}
		for off := 0; off < len(dgram); {
			h, size, err := ParseHeader(dgram[off:])
			if err != nil {
				return nil, fmt.Errorf("received datagram at byte %d: %w", off, err)
			}
			m := dgram[off : off+size]
			off += size
			if h.Seq != seq || h.PortID != c.portID {
				continue
			}
			out = append(out, m...)
			if len(out) > MaxReplySize {
				return nil, fmt.Errorf("reply exceeds %d bytes", MaxReplySize)
			}
			switch h.Type {
			case MsgError, MsgDone:
				e, err := Errno(h, m[HdrLen:h.Len])
				if err != nil {
					return nil, err
				}
				if e < 0 {
					return nil, unix.Errno(-e)
				}
				if h.Type == MsgDone || !dump {
					return out, nil
				}
			default:
				if !dump && !wantAck && h.Flags&FlagMulti == 0 {
					return out, nil
				}
			}
		}
	}
}

// recv returns the next datagram from the kernel, which stays valid until the next call.
func (c *Conn) recv() ([]byte, error) {
	for {
		var n int
		err := retryEINTR(func() (err error) {
			n, _, err = unix.Recvfrom(c.fd, c.buf, unix.MSG_PEEK|unix.MSG_TRUNC)
			return err
		})
		if err != nil {
			return nil, recvErr(err, c.timeout)
		}
		if n > len(c.buf) {
			c.buf = make([]byte, n)
		}
		var from unix.Sockaddr
		err = retryEINTR(func() (err error) {
			n, from, err = unix.Recvfrom(c.fd, c.buf, 0)
			return err
		})
		if err != nil {
			return nil, recvErr(err, c.timeout)
		}
		// Only the kernel (port id 0) answers requests; anything else is not for us.
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue
		}
		return c.buf[:n], nil
	}
}

func recvErr(err error, timeout time.Duration) error {
	if errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("no reply within %v: %w", timeout, os.ErrDeadlineExceeded)
	}
	return fmt.Errorf("receive: %w", err)
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
