package probe

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// The side channel reads what a hostile or broken peer may send: garbage, a line without end,
// an unknown field, an error, the wrong message.
func TestChannelRecv(t *testing.T) {
	for _, tc := range []struct {
		name, send, want, err string
	}{
		{"hello", `{"kind":"hello","endpoint":{"device":"rxa","port":1,"link_layer":"Ethernet","qpn":17,"psn":5,"mtu":1024,"addr":1,"rkey":2,"size":65536}}` + "\n", "hello", ""},
		{"garbage", "GET / HTTP/1.1\r\n", "hello", "not rdmadiag's"},
		{"unknown field", `{"kind":"hello","exploit":1}` + "\n", "hello", "not rdmadiag's"},
		{"the peer stopped", `{"kind":"error","error":"modify_qp_rtr: EINVAL"}` + "\n", "hello", "the peer stopped: modify_qp_rtr: EINVAL"},
		{"another message", `{"kind":"ready"}` + "\n", "hello", `sent "ready", want "hello"`},
		{"too long", strings.Repeat("x", maxChannelLine+10), "hello", "more than"},
		{"closed", "", "hello", "waiting for the peer's \"hello\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			go func() { b.Write([]byte(tc.send)); b.Close() }()
			ch := &channel{c: a, r: bufio.NewReaderSize(a, 4096), dl: time.Now().Add(2 * time.Second)}
			m, err := ch.recv(tc.want)
			if tc.err == "" {
				if err != nil || m.Kind != tc.want {
					t.Fatalf("%+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestEndpointValidate(t *testing.T) {
	good := func() *Endpoint {
		return &Endpoint{Device: "rxa", Port: 1, LinkLayer: "Ethernet", GID: "00000000000000000000ffffc0000201", QPN: 17, PSN: 1, MTU: 1024, Size: 65536}
	}
	if err := good().validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Endpoint){
		"QPN 0": func(e *Endpoint) { e.QPN = 0 }, "QPN beyond 24 bits": func(e *Endpoint) { e.QPN = 1 << 24 },
		"PSN beyond 24 bits": func(e *Endpoint) { e.PSN = 1 << 24 }, "MTU 1500": func(e *Endpoint) { e.MTU = 1500 },
		"no buffer": func(e *Endpoint) { e.Size = 0 }, "short GID": func(e *Endpoint) { e.GID = "ffff" },
		"GID not hex": func(e *Endpoint) { e.GID = strings.Repeat("zz", 16) },
	} {
		e := good()
		mut(e)
		if err := e.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var nilEP *Endpoint
	if nilEP.validate() == nil {
		t.Error("no endpoint accepted")
	}
}

// A listener without a peer gives up at the deadline, and the probe without libibverbs is
// skipped before it listens or dials.
func TestPairWithoutPeerOrLibrary(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := acceptCtx(ctx, l); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("accept without a peer: %v", err)
	}
	r := Pair(context.Background(), nil, "rxa", 1, PairOptions{Peer: "127.0.0.1:1"})
	if r.Status != Skipped || !errors.Is(r.Err, ErrNoLibrary) || r.Role != "connect" {
		t.Errorf("no library: %+v", r.Result)
	}
}

func TestPairHints(t *testing.T) {
	if h := pairCompletionHint("IBV_WC_RETRY_EXC_ERR"); !strings.Contains(h, "loses packets") {
		t.Errorf("retry exceeded: %q", h)
	}
	if h := pairCompletionHint("IBV_WC_REM_ACCESS_ERR"); !strings.Contains(h, "rkey") {
		t.Errorf("remote access: %q", h)
	}
	if h := rtrRemedy("ETIMEDOUT", "Ethernet"); !strings.Contains(h, "did not resolve") {
		t.Errorf("RTR timeout on RoCE: %q", h)
	}
	if h := rtrRemedy("ETIMEDOUT", "InfiniBand"); h != "" {
		t.Errorf("RTR timeout on IB: %q", h)
	}
}

// The dialling end waits for a listener that is not up yet, and gives up at its deadline.
func TestDialRetry(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := dialRetry(ctx, addr); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("nobody listening: %v", err)
	}
	go func() {
		time.Sleep(600 * time.Millisecond)
		if l2, err := net.Listen("tcp", addr); err == nil {
			defer l2.Close()
			if c, err := l2.Accept(); err == nil {
				c.Close()
			}
		}
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	c, err := dialRetry(ctx2, addr)
	if err != nil {
		t.Fatalf("listener up after 600 ms: %v", err)
	}
	c.Close()
}
