package pcie

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ExpressCap is what the PCI Express capability of a function's config space says about its
// link, read from /sys/bus/pci/devices/<bdf>/config (PCI Express Base Specification, "PCI
// Express Capability Structure"; field offsets as in include/uapi/linux/pci_regs.h PCI_EXP_*).
// Only root sees past the first 64 bytes of config space, so this is optional evidence: the
// sysfs link files remain the primary source.
type ExpressCap struct {
	// Offset of the capability in config space.
	Offset int
	// Version of the capability structure (1 or 2); LnkCap2/LnkCtl2 exist only from 2.
	Version int
	// PortType is PCI_EXP_FLAGS_TYPE: 0 endpoint, 1 legacy endpoint, 4 root port, 5 switch
	// upstream port, 6 switch downstream port, 7 PCIe-to-PCI bridge, 9 RC integrated endpoint.
	PortType int
	// CapSpeed/CapWidth are LnkCap; StaSpeed/StaWidth are LnkSta (the trained link).
	CapSpeed, StaSpeed Speed
	CapWidth, StaWidth int
	// TargetSpeed is LnkCtl2's Target Link Speed (0 when the capability is version 1): the speed
	// software asked the link to train to.
	TargetSpeed Speed
	// MaxPayloadSupported is DevCap's limit; MaxPayload and MaxReadRequest are DevCtl's
	// settings, in bytes.
	MaxPayloadSupported, MaxPayload, MaxReadRequest int
}

// PortTypeName names PortType for evidence.
func (c ExpressCap) PortTypeName() string {
	switch c.PortType {
	case 0:
		return "endpoint"
	case 1:
		return "legacy endpoint"
	case 4:
		return "root port"
	case 5:
		return "switch upstream port"
	case 6:
		return "switch downstream port"
	case 7:
		return "PCIe-to-PCI bridge"
	case 8:
		return "PCI-to-PCIe bridge"
	case 9:
		return "root complex integrated endpoint"
	case 10:
		return "root complex event collector"
	}
	return fmt.Sprintf("port type %d", c.PortType)
}

// Downstream reports whether the port's link goes to a device below it (root and switch
// downstream ports); endpoints and upstream ports report the link above them.
func (c ExpressCap) Downstream() bool { return c.PortType == 4 || c.PortType == 6 }

// ErrNoExpressCap means the readable config space holds no PCI Express capability (a non-root
// reader sees 64 bytes only, or the function is conventional PCI).
var ErrNoExpressCap = errors.New("no PCI Express capability in the readable config space")

// capSpeed maps the Link Speed encodings of LnkCap/LnkSta/LnkCtl2 (1 = 2.5 GT/s ... 6 = 64 GT/s).
func capSpeed(v uint16) Speed {
	switch v & 0xf {
	case 1:
		return 2.5
	case 2:
		return 5
	case 3:
		return 8
	case 4:
		return 16
	case 5:
		return 32
	case 6:
		return 64
	}
	return 0
}

// ParseConfig walks the capability list of a config space image and decodes the PCI Express
// capability. The walk is bounded (48 capabilities at most, as the kernel's
// PCI_FIND_CAP_TTL) so a looping list in a crafted snapshot cannot hang it.
func ParseConfig(b []byte) (ExpressCap, error) {
	var c ExpressCap
	if len(b) < 64 {
		return c, fmt.Errorf("config space: %d bytes, want at least the 64-byte header", len(b))
	}
	le := binary.LittleEndian
	if le.Uint16(b[0:]) == 0xffff {
		return c, errors.New("config space reads all-ones: the function is gone or in error")
	}
	const statusCapList = 0x10
	if le.Uint16(b[0x06:])&statusCapList == 0 {
		return c, ErrNoExpressCap
	}
	pos := int(b[0x34]) &^ 3
	for ttl := 48; pos >= 0x40 && ttl > 0; ttl-- {
		if pos+2 > len(b) {
			return c, ErrNoExpressCap
		}
		id, next := b[pos], int(b[pos+1])&^3
		if id == 0x10 {
			return decodeExpress(b, pos)
		}
		pos = next
	}
	return c, ErrNoExpressCap
}

func decodeExpress(b []byte, pos int) (ExpressCap, error) {
	le := binary.LittleEndian
	c := ExpressCap{Offset: pos}
	if pos+0x14 > len(b) {
		return c, fmt.Errorf("config space: PCI Express capability at 0x%x is cut off at %d bytes", pos, len(b))
	}
	flags := le.Uint16(b[pos+0x02:])
	c.Version = int(flags & 0xf)
	c.PortType = int(flags>>4) & 0xf
	devCap := le.Uint32(b[pos+0x04:])
	devCtl := le.Uint16(b[pos+0x08:])
	lnkCap := le.Uint32(b[pos+0x0c:])
	lnkSta := le.Uint16(b[pos+0x12:])
	c.MaxPayloadSupported = 128 << (devCap & 7)
	c.MaxPayload = 128 << ((devCtl >> 5) & 7)
	c.MaxReadRequest = 128 << ((devCtl >> 12) & 7)
	c.CapSpeed = capSpeed(uint16(lnkCap))
	c.CapWidth = int(lnkCap>>4) & 0x3f
	c.StaSpeed = capSpeed(lnkSta)
	c.StaWidth = int(lnkSta>>4) & 0x3f
	if c.Version >= 2 && pos+0x32 <= len(b) {
		c.TargetSpeed = capSpeed(le.Uint16(b[pos+0x30:]))
	}
	return c, nil
}
