package xcvr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// PageReader reads module memory with ETHTOOL_MSG_MODULE_EEPROM_GET semantics: offset 0-127 is
// the lower page (page and bank ignored), 128-255 the selected upper page of the selected bank;
// pages are 128 bytes. i2cAddr is 0x50 for SFF-8636 and CMIS (0x50/0x51 for SFF-8472).
type PageReader interface {
	ReadPage(i2cAddr, page, bank uint8, offset, length uint32) ([]byte, error)
}

const (
	pageSize = 128
	// i2cModule is the 7-bit address of the module memory, A0h (1010000x) in the 8-bit
	// notation SFF-8636 and CMIS use; ethtool's cmis.c sends 0x50 the same way.
	i2cModule uint8 = 0x50
)

// ErrShortPage is wrapped when a reader returns fewer bytes than a page.
var ErrShortPage = errors.New("short page")

// page is one 128-byte page; upper pages are indexed by their byte address (128-255) through at.
type page []byte

// at returns byte addr of an upper page (128-255) or of the lower page (0-127).
func (p page) at(addr int) byte {
	if addr >= pageSize {
		addr -= pageSize
	}
	return p[addr]
}

// u16 reads a big-endian 16-bit field at addr (the specifications store every multi-byte
// monitor and threshold most significant byte first).
func (p page) u16(addr int) uint16 {
	if addr >= pageSize {
		addr -= pageSize
	}
	return binary.BigEndian.Uint16(p[addr:])
}

func (p page) s16(addr int) int16 { return int16(p.u16(addr)) }

// ascii returns bytes [from, to] of the page as text with padding trimmed and anything outside
// printable ASCII replaced, so vendor strings cannot inject control sequences into a report.
func (p page) ascii(from, to int) string {
	var b strings.Builder
	for a := from; a <= to; a++ {
		c := p.at(a)
		if c < 0x20 || c > 0x7e {
			if c == 0 {
				b.WriteByte(' ')
				continue
			}
			c = '?'
		}
		b.WriteByte(c)
	}
	return strings.TrimSpace(b.String())
}

func (p page) oui(addr int) string {
	return fmt.Sprintf("%02x:%02x:%02x", p.at(addr), p.at(addr+1), p.at(addr+2))
}

// readPage reads one page and checks its length.
func readPage(r PageReader, i2c, pg, bank uint8, upper bool) (page, error) {
	off := uint32(0)
	if upper {
		off = pageSize
	}
	b, err := r.ReadPage(i2c, pg, bank, off, pageSize)
	if err != nil {
		return nil, err
	}
	if len(b) < pageSize {
		return nil, fmt.Errorf("%w: %d of %d bytes", ErrShortPage, len(b), pageSize)
	}
	return page(b[:pageSize:pageSize]), nil
}

// Read decodes a module: lower page 00h and upper page 00h first (both required), then the
// pages the identifier's specification and the module's advertisement say exist. A failed
// optional page is recorded in Module.Unavailable; only a failure of the first two pages is
// an error.
func Read(r PageReader) (*Module, error) {
	lower, err := readPage(r, i2cModule, 0, 0, false)
	if err != nil {
		return nil, fmt.Errorf("module eeprom i2c 0x%02x lower page 00h: %w", i2cModule, err)
	}
	upper0, err := readPage(r, i2cModule, 0, 0, true)
	if err != nil {
		return nil, fmt.Errorf("module eeprom i2c 0x%02x upper page 00h: %w", i2cModule, err)
	}
	// Byte 0 is the SFF-8024 identifier in every specification: SFF-8636 lower page byte 0,
	// CMIS 5.2 §8.2.1 lower memory byte 0, SFF-8472 address A0h byte 0.
	id := lower.at(0)
	m := &Module{Identifier: id, IdentifierName: identifierName(id), Spec: specOf(id)}
	switch m.Spec {
	case SpecSFF8636:
		decodeSFF8636(r, m, lower, upper0)
	case SpecCMIS:
		decodeCMIS(r, m, lower, upper0)
	case SpecSFF8472:
		decodeSFF8472(r, m, lower)
	default:
		m.unavailable("memory map", fmt.Sprintf("identifier %02xh (%s) has no decoder", id, m.IdentifierName))
	}
	return m, nil
}

// Unit conversions shared by SFF-8636 and CMIS (SFF-8636 Rev 2.10a Tables 6-7 and 6-8; CMIS 5.2
// Tables 8-10 and 8-82): temperature signed 1/256 °C, supply voltage
// 100 µV, optical power 0.1 µW, bias current 2 µA.

func tempC(raw int16) float64    { return float64(raw) / 256 }
func voltsV(raw uint16) float64  { return float64(raw) / 10000 }
func powerMW(raw uint16) float64 { return float64(raw) / 10000 }
func biasMA(raw uint16) float64  { return float64(raw) * 2 / 1000 }

// DBm converts milliwatts to dBm; zero power is -Inf.
func DBm(mw float64) float64 {
	if mw <= 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(mw)
}
