package xcvr

import "fmt"

// identifierNames is SNIA SFF-8024 Rev 4.x Table 4-1 "Identifier Values" (the codes in use
// for pluggable modules; the rest are reported by number).
var identifierNames = map[byte]string{
	0x00: "unknown or unspecified",
	0x01: "GBIC",
	0x02: "module soldered to motherboard",
	0x03: "SFP/SFP+/SFP28",
	0x06: "XFP",
	0x0B: "DWDM-SFP/SFP+",
	0x0C: "QSFP",
	0x0D: "QSFP+",
	0x0E: "CXP",
	0x11: "QSFP28",
	0x12: "CXP2",
	0x17: "microQSFP",
	0x18: "QSFP-DD",
	0x19: "OSFP",
	0x1A: "SFP-DD",
	0x1B: "DSFP",
	0x1E: "QSFP+ (CMIS)",
	0x1F: "SFP-DD (CMIS)",
	0x20: "SFP+ (CMIS)",
	0x21: "OSFP-XD",
}

func identifierName(id byte) string {
	if n, ok := identifierNames[id]; ok {
		return n
	}
	return fmt.Sprintf("identifier %02xh", id)
}

// specOf maps an identifier onto the memory map that describes it: SFF-8636 for QSFP, QSFP+
// and QSFP28 (QSFP56 modules managed by SFF-8636 report 11h too), SFF-8472 for SFP (03h), CMIS
// for the identifiers the kernel's net/ethtool/module.c (module_flash_fw_schedule) accepts as
// CMIS modules: QSFP-DD, OSFP, DSFP, QSFP+ CMIS, SFP-DD CMIS, SFP+ CMIS.
func specOf(id byte) Spec {
	switch id {
	case 0x0C, 0x0D, 0x11:
		return SpecSFF8636
	case 0x18, 0x19, 0x1B, 0x1E, 0x1F, 0x20:
		return SpecCMIS
	case 0x03:
		return SpecSFF8472
	}
	return SpecUnknown
}

// connectorNames is SFF-8024 Rev 4.x Table 4-3 "Connector Types".
var connectorNames = map[byte]string{
	0x00: "unknown",
	0x01: "SC",
	0x02: "Fibre Channel style 1 copper",
	0x03: "Fibre Channel style 2 copper",
	0x04: "BNC/TNC",
	0x05: "Fibre Channel coax",
	0x06: "Fiber Jack",
	0x07: "LC",
	0x08: "MT-RJ",
	0x09: "MU",
	0x0A: "SG",
	0x0B: "optical pigtail",
	0x0C: "MPO 1x12",
	0x0D: "MPO 2x16",
	0x20: "HSSDC II",
	0x21: "copper pigtail",
	0x22: "RJ45",
	0x23: "no separable connector",
	0x24: "MXC 2x16",
	0x25: "CS optical connector",
	0x26: "SN optical connector",
	0x27: "MPO 2x12",
	0x28: "MPO 1x16",
}

func connectorName(c byte) string {
	if n, ok := connectorNames[c]; ok {
		return n
	}
	return fmt.Sprintf("connector %02xh", c)
}

// transmitterTech names the 4-bit transmitter technology code shared by SFF-8636 Rev 2.10a
// upper page 00h byte 147 bits 7-4 ("Device Technology") and CMIS 5.2 upper page 00h byte 212
// ("Media Interface Technology"): 0h-9h are lasers, Ah-Fh copper cables.
var transmitterTech = [16]string{
	"850 nm VCSEL", "1310 nm VCSEL", "1550 nm VCSEL", "1310 nm FP", "1310 nm DFB",
	"1550 nm DFB", "1310 nm EML", "1550 nm EML", "other optical", "1490 nm DFB",
	"copper cable, unequalized", "copper cable, passive equalized",
	"copper cable, near and far end limiting active equalizers",
	"copper cable, far end limiting active equalizers",
	"copper cable, near end limiting active equalizers",
	"copper cable, linear active equalizers",
}

// techMedia says whether a transmitter technology code is a laser or a copper cable, and
// whether the copper is passive (Ah, Bh) or active (Ch-Fh).
func techMedia(code byte) Media {
	switch {
	case code <= 0x09:
		return MediaOptical
	case code <= 0x0B:
		return MediaCopperPassive
	case code <= 0x0F:
		return MediaCopperActive
	}
	return MediaUnknown
}
