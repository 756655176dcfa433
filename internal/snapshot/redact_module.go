package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// Transceiver serial numbers in recorded module EEPROM pages identify a site's hardware as a
// board serial does, so --redact replaces them with stand-ins of the field's length and fixes
// the page's check code, leaving every other byte (vendor, part number, diagnostics) as read.
// Field offsets: SFF-8472 Rev 12.4 Table 4-1 (A0h: Vendor SN 68-83, CC_EXT 95 over 64-94),
// SFF-8636 Rev 2.10a Table 6-15 (upper page 00h: Vendor SN 196-211, CC_EXT 223 over 192-222),
// CMIS Rev 5.2 Table 8-28 (page 00h: Vendor SN 166-181, page checksum 222 over 128-221), the
// offsets ethtool reads them at (sfpid.c, qsfp.h, cmis.h).
type serialField struct {
	sn, snLen       uint32
	sum, sumFrom    uint32 // check code byte and the first byte it covers (up to sum-1)
	clearFrom, tail uint32 // for a layout not known: clear [clearFrom, tail)
}

// moduleLayout picks the serial field of a read from its I2C address, page, offset and the
// SFF-8024 identifier the read itself holds (byte 0 of A0h, byte 128 of upper page 00h).
func moduleLayout(p ethtoolnl.EEPROMPage, data []byte) (serialField, bool) {
	if p.I2CAddr != 0x50 || p.Page != 0 || len(data) == 0 {
		return serialField{}, false
	}
	id := data[0]
	switch {
	case p.Offset == 0 && id == 0x03: // SFP/SFP+/SFP28 (SFF-8472)
		return serialField{sn: 68, snLen: 16, sum: 95, sumFrom: 64}, true
	case p.Offset == 128 && (id == 0x0c || id == 0x0d || id == 0x11): // QSFP, QSFP+, QSFP28 (SFF-8636)
		return serialField{sn: 196, snLen: 16, sum: 223, sumFrom: 192}, true
	case p.Offset == 128 && (id == 0x18 || id == 0x19 || id == 0x1e): // QSFP-DD, OSFP, QSFP+ with CMIS
		return serialField{sn: 166, snLen: 16, sum: 222, sumFrom: 128}, true
	case p.Offset == 128:
		// An upper page 00h of a layout not known here: everything but the identifier goes.
		return serialField{clearFrom: 129, tail: 256}, true
	}
	return serialField{}, false
}

// moduleSerials redacts the module EEPROM replies under dir (ethtool-netlink/).
func (r *redactor) moduleSerials(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		typ, p, ok := eepromRequest(strings.TrimSuffix(e.Name(), ".bin"))
		if !ok || !strings.HasSuffix(e.Name(), ".bin") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data, err := ethtoolnl.DecodeModuleEEPROM(b, typ)
		if err != nil || uint32(len(data)) != p.Length {
			continue // a refusal, or bytes the checks will call malformed anyway
		}
		nd := r.redactEEPROM(p, data)
		if bytes.Equal(nd, data) {
			continue
		}
		i := bytes.Index(b, data)
		if i < 0 {
			continue
		}
		copy(b[i:], nd)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// eepromRequest reads a recorded request key ("%04x-%04x-%x": type, flags, payload) back into
// the MODULE_EEPROM_GET read it asked for.
func eepromRequest(key string) (uint16, ethtoolnl.EEPROMPage, bool) {
	var p ethtoolnl.EEPROMPage
	parts := strings.SplitN(key, "-", 3)
	if len(parts) != 3 {
		return 0, p, false
	}
	typ, err := strconv.ParseUint(parts[0], 16, 16)
	payload, err2 := hex.DecodeString(parts[2])
	if err != nil || err2 != nil || len(payload) < 4 || payload[0] != ethtoolnl.CmdModuleEEPROMGet {
		return 0, p, false
	}
	seen := 0
	for off := 4; off < len(payload); {
		t, v, next, err := netlinkraw.NextAttr(payload, off)
		if err != nil {
			return 0, p, false
		}
		switch {
		case t == ethtoolnl.AttrEEPROMOffset && len(v) == 4:
			p.Offset, seen = binary.NativeEndian.Uint32(v), seen|1
		case t == ethtoolnl.AttrEEPROMLength && len(v) == 4:
			p.Length, seen = binary.NativeEndian.Uint32(v), seen|2
		case t == ethtoolnl.AttrEEPROMPage && len(v) == 1:
			p.Page = v[0]
		case t == ethtoolnl.AttrEEPROMBank && len(v) == 1:
			p.Bank = v[0]
		case t == ethtoolnl.AttrEEPROMI2CAddr && len(v) == 1:
			p.I2CAddr, seen = v[0], seen|4
		}
		off = next
	}
	return uint16(typ), p, seen == 7
}

// redactEEPROM returns data (the bytes of read p) with the serial number replaced.
func (r *redactor) redactEEPROM(p ethtoolnl.EEPROMPage, data []byte) []byte {
	f, ok := moduleLayout(p, data)
	if !ok {
		return data
	}
	out := append([]byte(nil), data...)
	at := func(abs uint32) int { return int(abs - p.Offset) }
	if f.snLen == 0 {
		for i := at(f.clearFrom); i < at(f.tail) && i < len(out); i++ {
			out[i] = 0
		}
		return out
	}
	if at(f.sum) >= len(out) {
		return data
	}
	sn := out[at(f.sn):at(f.sn+f.snLen)]
	orig := strings.TrimRight(string(sn), " \x00")
	if orig == "" {
		return data
	}
	validSum := checkCode(out[at(f.sumFrom):at(f.sum)]) == out[at(f.sum)]
	stand := r.stand("module-serial", orig, func(n int) string { return fmt.Sprintf("SN%0*d", int(f.snLen)-2, n) })
	r.addSerial(orig, stand) // wherever else it is written (a kernel log line, a diagnosis)
	copy(sn, stand)
	if validSum {
		out[at(f.sum)] = checkCode(out[at(f.sumFrom):at(f.sum)])
	}
	return out
}

// checkCode is the SFF check code: the low 8 bits of the sum of the bytes.
func checkCode(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return s
}
