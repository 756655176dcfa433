package observe_test

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/observe"
)

func TestParseAER(t *testing.T) {
	lab := "RxErr 0\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 1\n"
	c, order, err := observe.ParseAER([]byte(lab))
	if err != nil || c.Total != 1 || !c.HasTotal || c.Bits["BadTLP"] != 1 || len(order) != 8 {
		t.Fatalf("lab correctable file: %+v %v %v", c, order, err)
	}
	if nz := c.NonZero(order); len(nz) != 1 || nz[0] != "BadTLP=1" {
		t.Errorf("NonZero = %v", nz)
	}
	c, _, err = observe.ParseAER([]byte("CmpltTO 2\nAER_COR_ERR_9 1\n"))
	if err != nil || c.HasTotal || c.Total != 3 {
		t.Errorf("file without TOTAL line: %+v %v", c, err)
	}
	for _, bad := range []string{"", "\n\n", "RxErr\n", "RxErr x\n", "RxErr 1 2\n", "TOTAL_ERR_COR -1\n"} {
		if _, _, err := observe.ParseAER([]byte(bad)); err == nil {
			t.Errorf("ParseAER(%q): want an error", bad)
		}
	}
}

func FuzzParseAER(f *testing.F) {
	f.Add([]byte("RxErr 0\nBadTLP 1\nTOTAL_ERR_COR 1\n"))
	f.Add([]byte("CmpltTO 18446744073709551615\n"))
	f.Add([]byte("x y z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, order, err := observe.ParseAER(b)
		if err == nil && len(order) != len(c.Bits) {
			t.Fatalf("order %v does not match bits %v", order, c.Bits)
		}
	})
}
