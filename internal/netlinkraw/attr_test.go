package netlinkraw

import (
	"errors"
	"testing"
)

func TestAttrRoundTrip(t *testing.T) {
	b := AppendAttr(nil, 5, []byte("28.39.1002\x00"))
	b = AppendAttr(b, 0x8000|19, AppendAttr(nil, 20, nil))
	b = AppendAttr(b, 1, []byte{2, 0, 0, 0})
	if len(b)%4 != 0 {
		t.Fatalf("unaligned run: %d bytes", len(b))
	}
	var types []uint16
	for off := 0; off < len(b); {
		typ, val, next, err := NextAttr(b, off)
		if err != nil {
			t.Fatal(err)
		}
		if typ == 5 && string(val) != "28.39.1002\x00" {
			t.Errorf("value %q", val)
		}
		types = append(types, typ)
		off = next
	}
	if len(types) != 3 || types[1] != 19 {
		t.Errorf("types %v (the nested flag must be masked)", types)
	}
}

func TestNextAttrRefusesBadFraming(t *testing.T) {
	for name, c := range map[string]struct {
		b     []byte
		stray bool
	}{
		"stray":       {[]byte{8, 0}, true},
		"len zero":    {[]byte{0, 0, 5, 0}, false},
		"len too big": {[]byte{200, 0, 5, 0, 1, 2, 3, 4}, false},
	} {
		_, _, next, err := NextAttr(c.b, 0)
		var ae *AttrError
		if !errors.As(err, &ae) || ae.Stray != c.stray || next != 0 {
			t.Errorf("%s: %v (next %d)", name, err, next)
		}
	}
	// The last attribute may lack its padding.
	if _, v, next, err := NextAttr([]byte{5, 0, 1, 0, 7}, 0); err != nil || len(v) != 1 || next != 5 {
		t.Errorf("unpadded last attribute: %v %v %d", v, err, next)
	}
}
