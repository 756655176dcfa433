package ethtoolnl

import "fmt"

// maxLanes bounds a FEC statistic's lanes (ETHTOOL_MAX_LANES, include/uapi/linux/ethtool.h).
const maxLanes = 8

// DecodeFEC reads a FEC_GET reply of family fam (net/ethtool/fec.c, fec_fill_reply).
func DecodeFEC(b []byte, fam uint16) (*FEC, error) {
	var out *FEC
	err := walkReply(b, fam, replyFEC, func(attrs []byte) error {
		f := &FEC{}
		err := eachAttr(attrs, func(t uint16, v []byte) error {
			switch t {
			case AttrHeader:
				h, err := decodeHeader(v)
				f.Ifindex, f.Ifname = h.ifindex, h.ifname
				return err
			case AttrFECAuto:
				x, err := u8("FEC", t, v)
				f.Auto = x != 0
				return err
			case AttrFECActive:
				x, err := u32("FEC", t, v)
				f.Active = FECMode(x)
				return err
			case AttrFECStats:
				return decodeFECStats(v, f)
			}
			return nil
		})
		out = f
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeFECStats(b []byte, f *FEC) error {
	return eachAttr(b, func(t uint16, v []byte) error {
		var dst **FECStat
		switch t {
		case AttrFECStatCorrected:
			dst = &f.Corrected
		case AttrFECStatUncorr:
			dst = &f.Uncorrectable
		case AttrFECStatCorrBits:
			dst = &f.CorrectedBits
		default:
			return nil // PAD, and the histogram newer kernels add
		}
		s, err := decodeStatArray(t, v)
		*dst = s
		return err
	})
}

// decodeStatArray reads an ETHTOOL_A_FEC_STAT_* array: empty when the driver does not report
// it, the total alone, or the total followed by one value per lane.
func decodeStatArray(t uint16, v []byte) (*FECStat, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if len(v)%8 != 0 || len(v)/8 > 1+maxLanes {
		return nil, fmt.Errorf("FEC statistic %d: %d bytes, not 1 to %d u64 values: %w", t, len(v), 1+maxLanes, ErrMalformed)
	}
	s := &FECStat{Total: ne.Uint64(v)}
	for off := 8; off < len(v); off += 8 {
		s.Lanes = append(s.Lanes, ne.Uint64(v[off:]))
	}
	return s, nil
}

// DecodeLinkModes reads a LINKMODES_GET reply of family fam (net/ethtool/linkmodes.c).
func DecodeLinkModes(b []byte, fam uint16) (*LinkModes, error) {
	var out *LinkModes
	err := walkReply(b, fam, replyLinkModes, func(attrs []byte) error {
		l := &LinkModes{}
		err := eachAttr(attrs, func(t uint16, v []byte) error {
			var err error
			switch t {
			case AttrHeader:
				var h header
				h, err = decodeHeader(v)
				l.Ifindex, l.Ifname = h.ifindex, h.ifname
			case AttrLinkModesAutoneg:
				var x uint8
				x, err = u8("LINKMODES", t, v)
				l.Autoneg = x == 1 // AUTONEG_ENABLE
			case AttrLinkModesSpeed:
				l.SpeedMbps, err = u32("LINKMODES", t, v)
				if l.SpeedMbps == speedUnknown {
					l.SpeedMbps = 0
				}
			case AttrLinkModesDuplex:
				l.Duplex, err = u8("LINKMODES", t, v)
			case AttrLinkModesLanes:
				l.Lanes, err = u32("LINKMODES", t, v)
			}
			return err
		})
		out = l
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeModuleEEPROM reads a MODULE_EEPROM_GET reply of family fam (net/ethtool/eeprom.c,
// eeprom_fill_reply): the bytes the module returned.
func DecodeModuleEEPROM(b []byte, fam uint16) ([]byte, error) {
	var data []byte
	found := false
	err := walkReply(b, fam, replyModuleEEPROM, func(attrs []byte) error {
		return eachAttr(attrs, func(t uint16, v []byte) error {
			if t == AttrEEPROMData {
				data, found = append([]byte(nil), v...), true
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("module EEPROM reply without ETHTOOL_A_MODULE_EEPROM_DATA: %w", ErrMalformed)
	}
	return data, nil
}
