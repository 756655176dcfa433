package pcie

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// ACS is a function's Access Control Services extended capability (PCI Express Base
// Specification, "ACS Extended Capability"; PCI_EXT_CAP_ID_ACS 0x0d and the PCI_ACS_* bits in
// include/uapi/linux/pci_regs.h): the capability register at cap+4, the control register at
// cap+6.
type ACS struct {
	Offset       int
	Cap, Control uint16
}

// ACS control bits (include/uapi/linux/pci_regs.h).
const (
	ACSSourceValidation   = 0x0001 // PCI_ACS_SV
	ACSTranslationBlock   = 0x0002 // PCI_ACS_TB
	ACSRequestRedirect    = 0x0004 // PCI_ACS_RR
	ACSCompletionRedirect = 0x0008 // PCI_ACS_CR
	ACSUpstreamForwarding = 0x0010 // PCI_ACS_UF
	ACSEgressControl      = 0x0020 // PCI_ACS_EC
	ACSDirectTranslated   = 0x0040 // PCI_ACS_DT
)

// acsRedirect are the bits that send peer-to-peer requests and completions up to the root
// complex instead of across the switch; they are the ones the kernel's pci=disable_acs_redir
// clears "to always allow passing P2P traffic" (commit aaca43fda742, "PCI: Add
// pci=disable_acs_redir= parameter for peer-to-peer support").
const acsRedirect = ACSRequestRedirect | ACSCompletionRedirect | ACSEgressControl

// Redirects reports whether peer traffic is redirected upstream.
func (a ACS) Redirects() bool { return a.Control&acsRedirect != 0 }

// Bits names the control bits set, as lspci prints them ("SrcValid+ ReqRedir+ CmpltRedir+").
func (a ACS) Bits() string {
	names := []struct {
		bit  uint16
		name string
	}{{ACSSourceValidation, "SrcValid"}, {ACSTranslationBlock, "TransBlk"}, {ACSRequestRedirect, "ReqRedir"},
		{ACSCompletionRedirect, "CmpltRedir"}, {ACSUpstreamForwarding, "UpstreamFwd"}, {ACSEgressControl, "EgressCtrl"},
		{ACSDirectTranslated, "DirectTrans"}}
	var out []string
	for _, n := range names {
		if a.Control&n.bit != 0 {
			out = append(out, n.name+"+")
		}
	}
	if len(out) == 0 {
		return "none set"
	}
	return strings.Join(out, " ")
}

// ErrNoExtendedConfig means the config image stops at 256 bytes or less: the kernel serves the
// extended configuration space (offsets 0x100-0xfff) to root only (pci_read_config in
// drivers/pci/pci-sysfs.c limits other readers to the first 64 bytes).
var ErrNoExtendedConfig = errors.New("the extended configuration space (from offset 0x100) is not in the readable config file: only root reads it")

// ErrNoACS means the function has no ACS capability: it neither redirects nor blocks.
var ErrNoACS = errors.New("no ACS capability")

const extCapACS = 0x000d

// ParseACS walks the extended capability list from offset 0x100 and decodes the ACS capability.
// The walk is bounded (the extended space holds at most (4096-256)/4 headers, the kernel's
// PCI_FIND_CAP_TTL for the extended list in pci_find_next_ext_capability) so a looping list in
// a crafted snapshot cannot hang it.
func ParseACS(b []byte) (ACS, error) {
	if len(b) <= 0x100 {
		return ACS{}, ErrNoExtendedConfig
	}
	le := binary.LittleEndian
	pos := 0x100
	for ttl := (4096 - 256) / 8; ttl > 0; ttl-- {
		if pos+4 > len(b) {
			return ACS{}, fmt.Errorf("config space: extended capability at 0x%x is cut off at %d bytes", pos, len(b))
		}
		h := le.Uint32(b[pos:])
		if h == 0 || h == 0xffffffff {
			return ACS{}, ErrNoACS
		}
		if h&0xffff == extCapACS {
			if pos+8 > len(b) {
				return ACS{}, fmt.Errorf("config space: ACS capability at 0x%x is cut off at %d bytes", pos, len(b))
			}
			return ACS{Offset: pos, Cap: le.Uint16(b[pos+4:]), Control: le.Uint16(b[pos+6:])}, nil
		}
		next := int(h>>20) &^ 3
		if next < 0x100 {
			return ACS{}, ErrNoACS
		}
		pos = next
	}
	return ACS{}, ErrNoACS
}
