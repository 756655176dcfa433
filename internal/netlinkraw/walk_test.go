package netlinkraw

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestWalk(t *testing.T) {
	errBad := errors.New("malformed test reply")
	const want = 0x1401
	msg := func(typ uint16, payload ...byte) []byte { return AppendMessage(nil, typ, 0, 0, 0, payload) }
	cat := func(ms ...[]byte) []byte {
		var b []byte
		for _, m := range ms {
			b = append(b, m...)
		}
		return b
	}
	errno := func(e int32) []byte { return ne.AppendUint32(nil, uint32(e)) }
	for _, c := range []struct {
		name     string
		b        []byte
		needDone bool
		payloads int
		err      string // "" none; otherwise a substring, and whether it wraps errBad
		bad      bool
		errno    syscall.Errno
	}{
		{name: "dump", b: cat(msg(want, 1), msg(MsgNoop), msg(want, 2), msg(MsgDone, errno(0)...)), needDone: true, payloads: 2},
		{name: "plain reply without DONE", b: msg(want, 1), payloads: 1},
		{name: "acknowledgement then DONE", b: cat(msg(want, 1), msg(MsgError, errno(0)...), msg(MsgDone)), needDone: true, payloads: 1},
		{name: "dump without DONE", b: msg(want, 1), needDone: true, payloads: 1, err: "ends without NLMSG_DONE after 1 messages", bad: true},
		{name: "empty plain reply", b: nil, err: "ends without NLMSG_DONE after 0 messages", bad: true},
		{name: "refused dump: errno in DONE", b: cat(msg(want, 1), msg(MsgDone, errno(-22)...)), needDone: true, payloads: 1, errno: syscall.EINVAL},
		{name: "errno in NLMSG_ERROR", b: msg(MsgError, errno(-1)...), errno: syscall.EPERM},
		{name: "bytes after DONE", b: cat(msg(MsgDone, errno(0)...), msg(want, 1)), needDone: true, err: "20 bytes after NLMSG_DONE", bad: true},
		{name: "overrun", b: msg(MsgOverrun), err: "message 0 at byte 0: NLMSG_OVERRUN", bad: true},
		{name: "other type", b: cat(msg(want, 1), msg(0x1402, 1)), payloads: 1, err: "message 1 at byte 20: type 0x1402, want 0x1401", bad: true},
		{name: "short header", b: []byte{1, 2, 3}, err: "message 0 at byte 0: 3 bytes left", bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			err := Walk(c.b, want, c.needDone, errBad, func(p []byte) error { n++; return nil })
			if n != c.payloads {
				t.Errorf("fn called %d times, want %d", n, c.payloads)
			}
			switch {
			case c.errno != 0:
				if !errors.Is(err, c.errno) || errors.Is(err, errBad) {
					t.Errorf("err %v, want the kernel's %v", err, c.errno)
				}
			case c.err == "":
				if err != nil {
					t.Errorf("err %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), c.err) || errors.Is(err, errBad) != c.bad:
				t.Errorf("err %v, want %q (wrapping the caller's sentinel: %v)", err, c.err, c.bad)
			}
		})
	}
	// fn's error stops the walk and names the message.
	stop := errors.New("decoder error")
	err := Walk(cat(msg(want, 1), msg(want, 2)), want, false, errBad, func([]byte) error { return stop })
	if !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), "message 0 at byte 0: ") {
		t.Errorf("err %v", err)
	}
}
