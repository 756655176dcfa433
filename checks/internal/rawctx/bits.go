package rawctx

import "encoding/binary"

// leField is an hns FIELD_LOC(h, l): bits h..l (h >= l, both in one dword) of a context made
// of little-endian u32s, bit N at bit N%32 of the u32 at byte 4*(N/32)
// (hns_roce_common.h _hr_reg_read, K61 l.97-103). The caller has checked the length.
type leField struct{ h, l uint }

func (f leField) width() uint   { return f.h - f.l + 1 }
func (f leField) mask() uint32  { return uint32(1<<f.width() - 1) }
func (f leField) byteOff() uint { return 4 * (f.l / 32) }

func (f leField) get(b []byte) uint32 {
	v := binary.LittleEndian.Uint32(b[f.byteOff():])
	return v >> (f.l % 32) & f.mask()
}

func (f leField) put(b []byte, v uint32) {
	o := f.byteOff()
	m := f.mask() << (f.l % 32)
	w := binary.LittleEndian.Uint32(b[o:])
	binary.LittleEndian.PutUint32(b[o:], w&^m|v<<(f.l%32)&m)
}

// beField is an mlx5_ifc field: bit offset off and width w in the PRM numbering, where bit 0
// is the most significant bit of the first big-endian dword. Fields read here never straddle
// a dword.
type beField struct{ off, w uint }

func (f beField) mask() uint32  { return uint32(1<<f.w - 1) }
func (f beField) byteOff() uint { return 4 * (f.off / 32) }
func (f beField) shift() uint   { return 32 - f.off%32 - f.w }

func (f beField) get(b []byte) uint32 {
	return binary.BigEndian.Uint32(b[f.byteOff():]) >> f.shift() & f.mask()
}

func (f beField) put(b []byte, v uint32) {
	o := f.byteOff()
	m := f.mask() << f.shift()
	w := binary.BigEndian.Uint32(b[o:])
	binary.BigEndian.PutUint32(b[o:], w&^m|v<<f.shift()&m)
}

// log2Exact returns n's base-2 logarithm when n is a power of two no larger than 1<<maxLog.
func log2Exact(n uint32, maxLog uint) (uint32, bool) {
	if n == 0 || n&(n-1) != 0 {
		return 0, false
	}
	var l uint32
	for n > 1 {
		n >>= 1
		l++
	}
	return l, uint(l) <= maxLog
}
