package dcbnl_test

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl/dcbtest"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// mlx5 with trust DSCP and PFC on priority 3 (NVIDIA's lossless RoCE example: mlnx_qos -i
// <if> --trust dscp --pfc 0,0,0,1,0,0,0,0): the APP table holds the 64 DSCP entries mlx5 keeps
// in that state (mlx5e_dcbnl_dscp_app), DSCP 24-31 on priority 3 as the default map.
func roce() dcbnl.IEEE {
	ieee := uint8(0x8 | 0x4) // DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_HOST
	v := dcbnl.IEEE{Ifname: "ens1f0np0",
		ETS:  &dcbnl.ETS{TCTxBW: [8]uint8{13, 13, 13, 13, 12, 12, 12, 12}, TSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, PrioTC: [8]uint8{0, 1, 2, 3, 4, 5, 6, 7}},
		PFC:  &dcbnl.PFC{Cap: 8, Enabled: 1 << 3, Requests: [8]uint64{3: 120}, Indications: [8]uint64{3: 4500}},
		DCBX: &ieee}
	for d := uint16(0); d < 64; d++ {
		v.Apps = append(v.Apps, dcbnl.App{Selector: dcbnl.SelDSCP, Priority: uint8(d >> 3), Protocol: d})
	}
	return v
}

func TestDecodeIEEE(t *testing.T) {
	r := roce()
	withTrust := roce()
	withTrust.Trust = []uint8{dcbnl.SelPCP, dcbnl.SelDSCP}
	pcp := dcbnl.IEEE{Ifname: "eth1", PFC: &dcbnl.PFC{Cap: 8}, Apps: []dcbnl.App{}}
	for _, tc := range []struct {
		name string
		v    dcbnl.IEEE
		dscp bool
	}{
		{"mlx5 trust dscp, PFC on 3", r, true},
		{"trust table (6.3+)", withTrust, true},
		{"PCP trust, PFC off, no ETS", pcp, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dcbnl.DecodeIEEE(dcbtest.IEEEReply(tc.v))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.v) {
				t.Fatalf("got %+v\nwant %+v", *got, tc.v)
			}
			if got.TrustsDSCP() != tc.dscp {
				t.Errorf("TrustsDSCP %v, want %v", got.TrustsDSCP(), tc.dscp)
			}
		})
	}
	if m := r.DSCPPriority(); m[26] != 3 || len(m) != 64 {
		t.Errorf("DSCP 26 -> %d (of %d entries), want 3", m[26], len(m))
	}
	if !r.PFC.EnabledOn(3) || r.PFC.EnabledOn(0) || r.PFC.EnabledOn(9) {
		t.Error("EnabledOn")
	}
}

func TestDecodeIEEEErrors(t *testing.T) {
	short := netlinkraw.AppendMessage(nil, dcbnl.MsgGetDCB, 0, 0, 0, []byte{0, dcbnl.CmdIEEEGet})
	w := &netlinkraw.AttrWriter{}
	w.Nest(dcbnl.AttrIEEE, func() { w.Put(dcbnl.AttrIEEEPFC, make([]byte, 10)) })
	shortPFC := netlinkraw.AppendMessage(nil, dcbnl.MsgGetDCB, 0, 0, 0, append([]byte{0, dcbnl.CmdIEEEGet, 0, 0}, w.B...))
	wrongCmd := netlinkraw.AppendMessage(nil, dcbnl.MsgGetDCB, 0, 0, 0, []byte{0, 22, 0, 0})
	for name, b := range map[string][]byte{"empty": nil, "short dcbmsg": short, "short PFC": shortPFC, "another command": wrongCmd,
		"two messages": append(dcbtest.IEEEReply(roce()), dcbtest.IEEEReply(roce())...)} {
		if _, err := dcbnl.DecodeIEEE(b); !errors.Is(err, dcbnl.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := dcbnl.DecodeIEEE(dcbtest.ErrorReply(syscall.EOPNOTSUPP)); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("refusal: %v", err)
	}
}

func TestClient(t *testing.T) {
	m := dcbtest.Model{Netdevs: []dcbnl.IEEE{roce()}, Refuse: []string{"eth0"}}
	c := dcbnl.NewClient(m.Conn())
	if v, err := c.IEEE("ens1f0np0"); err != nil || !v.PFC.EnabledOn(3) {
		t.Fatalf("%+v, %v", v, err)
	}
	if _, err := c.IEEE("eth0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("virtio_net: %v", err)
	}
}

// FuzzDecodeIEEE: no input may panic, and every failure is a kernel errno or ErrMalformed.
func FuzzDecodeIEEE(f *testing.F) {
	f.Add(dcbtest.IEEEReply(roce()))
	f.Add(dcbtest.ErrorReply(syscall.EOPNOTSUPP))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := dcbnl.DecodeIEEE(b)
		var errno syscall.Errno
		if err != nil && !errors.Is(err, dcbnl.ErrMalformed) && !errors.As(err, &errno) {
			t.Errorf("unclassified error %v", err)
		}
		if err != nil && v != nil {
			t.Errorf("value with error %v", err)
		}
		if v != nil && len(v.Apps) > 1024 {
			t.Errorf("%d APP entries", len(v.Apps))
		}
	})
}
