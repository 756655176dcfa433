package rawctx

import (
	"strings"
	"testing"
)

func TestForPCIDriver(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Driver
		ok   bool
	}{
		{"mlx5_core", MLX5, true},
		{"hns3", HNS, true},
		{"hns_roce_hw_v2", "", false}, // the RDMA module, not the PCI driver
		{"bnxt_en", "", false},        // raw blob with no public layout
		{"irdma", "", false},
		{"", "", false},
	} {
		d, ok := ForPCIDriver(tc.name)
		if d != tc.want || ok != tc.ok {
			t.Errorf("ForPCIDriver(%q) = %q, %v; want %q, %v", tc.name, d, ok, tc.want, tc.ok)
		}
	}
}

func TestLayouts(t *testing.T) {
	if got := Layouts(HNS); len(got) != 1 || got[0] != LayoutByLength {
		t.Errorf("Layouts(HNS) = %v", got)
	}
	if got := Layouts(MLX5); len(got) != 2 || got[0] != LayoutQueryOut || got[1] != LayoutContext {
		t.Errorf("Layouts(MLX5) = %v", got)
	}
	if got := Layouts("rxe"); got != nil {
		t.Errorf("Layouts(rxe) = %v, want nil", got)
	}
	names := map[string]bool{}
	for _, l := range []Layout{LayoutByLength, LayoutQueryOut, LayoutContext, 0, 9} {
		names[l.String()] = true
	}
	if len(names) != 5 {
		t.Errorf("layout names not distinct: %v", names)
	}
}

func TestDecodeRefusesWrongDriverOrLayout(t *testing.T) {
	qpc := make([]byte, HNSQPCSCCSize)
	for _, tc := range []struct {
		d    Driver
		l    Layout
		want string
	}{
		{"rxe", LayoutByLength, `driver "rxe": no decoder`},
		{HNS, LayoutQueryOut, "layout mlx5-query-out is not one of its layouts"},
		{HNS, 0, "layout layout(0)"},
		{MLX5, LayoutByLength, "layout hns-by-length is not one"},
		{MLX5, 7, "layout layout(7)"},
	} {
		if _, err := DecodeQP(tc.d, tc.l, qpc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeQP(%s, %v): err %v, want it to contain %q", tc.d, tc.l, err, tc.want)
		}
		if _, err := DecodeCQ(tc.d, tc.l, qpc[:HNSCQCSize]); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeCQ(%s, %v): err %v, want it to contain %q", tc.d, tc.l, err, tc.want)
		}
		if _, err := EncodeQP(tc.d, tc.l, QP{State: 3, SQ: 1}); err == nil {
			t.Errorf("EncodeQP(%s, %v) accepted", tc.d, tc.l)
		}
		if _, err := EncodeCQ(tc.d, tc.l, CQ{Depth: 1}); err == nil {
			t.Errorf("EncodeCQ(%s, %v) accepted", tc.d, tc.l)
		}
	}
}

func TestIBState(t *testing.T) {
	type want struct {
		ib   uint8
		ok   bool
		name string
	}
	hns := []want{
		{0, true, "RESET"}, {1, true, "INIT"}, {2, true, "RTR"}, {3, true, "RTS"},
		{4, true, "SQD"}, {5, true, "SQE"}, {6, true, "ERR"}, {4, true, "SQD"}, // 7 = SQ_DRAINING
		{0, false, "state 8"},
	}
	mlx5 := []want{
		{0, true, "RESET"}, {1, true, "INIT"}, {2, true, "RTR"}, {3, true, "RTS"},
		{5, true, "SQE"}, // 4 = SQER
		{4, true, "SQD"}, // 5 = SQD (qp.h)
		{6, true, "ERR"}, // 6
		{4, true, "SQD"}, // 7 = SQ_DRAINING (qp.h), SQD (mlx5_ifc.h)
		{0, false, "state 8"},
		{0, false, "SUSPENDED"}, // 9
		{0, false, "state 10"},
		{0, false, "state 15"},
	}
	for _, f := range []string{FormatHNS61, FormatHNSQPC} {
		for st, w := range hns {
			q := QP{Format: f, State: uint8(st)}
			ib, ok := IBState(q)
			if ib != w.ib || ok != w.ok || StateName(q) != w.name {
				t.Errorf("%s state %d: IBState %d,%v StateName %q; want %d,%v %q", f, st, ib, ok, StateName(q), w.ib, w.ok, w.name)
			}
		}
	}
	for i, w := range mlx5 {
		st := i
		if i >= 10 {
			st = []int{10, 15}[i-10]
		}
		q := QP{Format: FormatMLX5, State: uint8(st)}
		ib, ok := IBState(q)
		if ib != w.ib || ok != w.ok || StateName(q) != w.name {
			t.Errorf("mlx5 state %d: IBState %d,%v StateName %q; want %d,%v %q", st, ib, ok, StateName(q), w.ib, w.ok, w.name)
		}
	}
	if _, ok := IBState(QP{Format: "bnxt", State: 3}); ok {
		t.Error("IBState of an unknown format claimed a mapping")
	}
}
