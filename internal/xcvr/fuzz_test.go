package xcvr

import (
	"errors"
	"testing"
)

// fuzzReader serves pages cut from fuzz input: each request takes the next chunk, whose
// first byte chooses a full page, a short page or an error.
type fuzzReader struct {
	data  []byte
	reads int
}

func (f *fuzzReader) ReadPage(_, _, _ uint8, _, n uint32) ([]byte, error) {
	f.reads++
	if f.reads > 64 {
		return nil, errors.New("too many reads")
	}
	if len(f.data) == 0 {
		return nil, errors.New("eof")
	}
	ctl := f.data[0]
	f.data = f.data[1:]
	switch ctl % 8 {
	case 0:
		return nil, errors.New("read error")
	case 1:
		k := int(ctl) % (len(f.data) + 1)
		b := f.data[:k]
		f.data = f.data[k:]
		return b, nil
	}
	b := make([]byte, n+uint32(ctl%3)) // sometimes longer than asked
	k := copy(b, f.data)
	f.data = f.data[k:]
	return b, nil
}

func FuzzRead(f *testing.F) {
	seed := func(e *eeprom, order []pageKey) []byte {
		var out []byte
		for _, k := range order {
			out = append(out, 2)
			out = append(out, e.pages[k]...)
		}
		return out
	}
	lo, up := pageKey{i2cModule, 0, 0, false}, pageKey{i2cModule, 0, 0, true}
	f.Add(seed(sff8636Optical(), []pageKey{lo, up, {i2cModule, 3, 0, true}}))
	f.Add(seed(sff8636DAC(), []pageKey{lo, up}))
	f.Add(seed(cmisOptical(), []pageKey{lo, up, {i2cModule, 1, 0, true}, {i2cModule, 2, 0, true}, {i2cModule, 0x11, 0, true}}))
	f.Add(seed(sff8472Optical(), []pageKey{lo, up, {i2cDiag, 0, 0, false}}))
	f.Add([]byte{})
	f.Add([]byte{1, 0x11})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{data: data}
		m, err := Read(r)
		if r.reads > 8 {
			t.Fatalf("%d page reads for one module", r.reads)
		}
		if err != nil {
			if m != nil {
				t.Fatal("module and error")
			}
			return
		}
		for _, v := range Judge(m) {
			_ = v.String()
		}
		_ = Summary(m)
	})
}
