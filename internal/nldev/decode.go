package nldev

import (
	"fmt"
)

// Each Decode function reads a complete dump reply (every message up to and including
// NLMSG_DONE) as a NetlinkConn returns it. They never panic on bad input: framing and size
// errors wrap ErrMalformed and a kernel error comes back as a syscall.Errno.

// DecodeDevices decodes an RDMA_NLDEV_CMD_GET dump.
func DecodeDevices(b []byte) ([]Device, error) {
	out, err := decodeDevices(b)
	if err != nil {
		return nil, fmt.Errorf("nldev device dump: %w", err)
	}
	return out, nil
}

func decodeDevices(b []byte) ([]Device, error) {
	var out []Device
	var d values
	err := walkDump(b, MsgType(CmdGet), func(p []byte) error {
		var dev Device
		var haveIndex bool
		it := attrs{b: p}
		for t, v, ok := it.next(); ok; t, v, ok = it.next() {
			switch t {
			case AttrDevIndex:
				dev.Index, haveIndex = d.u32(t, v), true
			case AttrDevName:
				dev.Name = d.str(v)
			case AttrPortIndex:
				// In a device reply PORT_INDEX is the number of ports (rdma_end_port).
				dev.NumPorts = d.u32(t, v)
			case AttrCapFlags:
				dev.CapFlags = d.u64(t, v)
			case AttrFWVersion:
				dev.FWVersion = d.str(v)
			case AttrNodeGUID:
				dev.NodeGUID = GUID(d.u64(t, v))
			case AttrSysImageGUID:
				dev.SysImageGUID = GUID(d.u64(t, v))
			case AttrDevNodeType:
				dev.NodeType = d.u8(t, v)
			case AttrDevProtocol:
				dev.Protocol = d.str(v)
			case AttrDevDIM:
				dev.DIM, dev.HasDIM = d.u8(t, v) != 0, true
			}
		}
		if err := firstErr(it.err, d.err); err != nil {
			return err
		}
		if !haveIndex {
			return missing(AttrDevIndex)
		}
		out = append(out, dev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodePorts decodes an RDMA_NLDEV_CMD_PORT_GET dump.
func DecodePorts(b []byte) ([]Port, error) {
	out, err := decodePorts(b)
	if err != nil {
		return nil, fmt.Errorf("nldev port dump: %w", err)
	}
	return out, nil
}

func decodePorts(b []byte) ([]Port, error) {
	var out []Port
	var d values
	err := walkDump(b, MsgType(CmdPortGet), func(p []byte) error {
		var port Port
		var haveIndex bool
		it := attrs{b: p}
		for t, v, ok := it.next(); ok; t, v, ok = it.next() {
			switch t {
			case AttrDevIndex:
				port.DevIndex = d.u32(t, v)
			case AttrDevName:
				port.DevName = d.str(v)
			case AttrPortIndex:
				port.Index, haveIndex = d.u32(t, v), true
			case AttrCapFlags:
				port.CapFlags = d.u64(t, v)
			case AttrSubnetPrefix:
				port.SubnetPrefix, port.HasIB = GUID(d.u64(t, v)), true
			case AttrLID:
				port.LID, port.HasIB = d.u32(t, v), true
			case AttrSMLID:
				port.SMLID, port.HasIB = d.u32(t, v), true
			case AttrLMC:
				port.LMC, port.HasIB = d.u8(t, v), true
			case AttrPortState:
				port.State = d.u8(t, v)
			case AttrPortPhysState:
				port.PhysState = d.u8(t, v)
			case AttrNdevIndex:
				port.NetdevIndex = d.u32(t, v)
			case AttrNdevName:
				port.NetdevName = d.str(v)
			}
		}
		if err := firstErr(it.err, d.err); err != nil {
			return err
		}
		if !haveIndex {
			return missing(AttrPortIndex)
		}
		out = append(out, port)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeResSummary decodes an RDMA_NLDEV_CMD_RES_GET dump.
func DecodeResSummary(b []byte) ([]ResSummary, error) {
	out, err := decodeResSummary(b)
	if err != nil {
		return nil, fmt.Errorf("nldev resource summary dump: %w", err)
	}
	return out, nil
}

func decodeResSummary(b []byte) ([]ResSummary, error) {
	var out []ResSummary
	var d values
	err := walkDump(b, MsgType(CmdResGet), func(p []byte) error {
		idx, name, table, err := d.device(p, AttrResSummary)
		if err != nil {
			return err
		}
		rs := ResSummary{DevIndex: idx, DevName: name, Counts: map[string]uint64{}}
		entries := attrs{b: table}
		for t, e, ok := entries.next(); ok; t, e, ok = entries.next() {
			if t != AttrResSummaryEntry {
				continue
			}
			var key string
			var val uint64
			var haveKey, haveVal bool
			it := attrs{b: e}
			for t, v, ok := it.next(); ok; t, v, ok = it.next() {
				switch t {
				case AttrResSummaryName:
					key, haveKey = d.str(v), true
				case AttrResSummaryCurr:
					val, haveVal = d.u64(t, v), true
				}
			}
			if err := firstErr(it.err, d.err); err != nil {
				return fmt.Errorf("summary entry: %w", err)
			}
			if !haveKey || !haveVal {
				return fmt.Errorf("summary entry %q without name or count: %w", key, ErrMalformed)
			}
			rs.Counts[key] = val
		}
		if entries.err != nil {
			return entries.err
		}
		out = append(out, rs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeQPs decodes an RDMA_NLDEV_CMD_RES_QP_GET dump.
func DecodeQPs(b []byte) ([]QP, error) {
	out, err := decodeQPs(b)
	if err != nil {
		return nil, fmt.Errorf("nldev QP dump: %w", err)
	}
	return out, nil
}

// DecodeCQs decodes an RDMA_NLDEV_CMD_RES_CQ_GET dump.
func DecodeCQs(b []byte) ([]CQ, error) {
	out, err := decodeCQs(b)
	if err != nil {
		return nil, fmt.Errorf("nldev CQ dump: %w", err)
	}
	return out, nil
}

// DecodeMRs decodes an RDMA_NLDEV_CMD_RES_MR_GET dump.
func DecodeMRs(b []byte) ([]MR, error) {
	out, err := decodeMRs(b)
	if err != nil {
		return nil, fmt.Errorf("nldev MR dump: %w", err)
	}
	return out, nil
}

// DecodePDs decodes an RDMA_NLDEV_CMD_RES_PD_GET dump.
func DecodePDs(b []byte) ([]PD, error) {
	out, err := decodePDs(b)
	if err != nil {
		return nil, fmt.Errorf("nldev PD dump: %w", err)
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func missing(t uint16) error {
	return fmt.Errorf("no %s attribute: %w", attrName(t), ErrMalformed)
}

// device reads the device handle every per-device reply message starts with and returns the
// payload of the nested table attribute (nil when the message has none).
func (d *values) device(p []byte, table uint16) (idx uint32, name string, tab []byte, err error) {
	var haveIndex bool
	it := attrs{b: p}
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		switch t {
		case AttrDevIndex:
			idx, haveIndex = d.u32(t, v), true
		case AttrDevName:
			name = d.str(v)
		case table:
			tab = v
		}
	}
	if err := firstErr(it.err, d.err); err != nil {
		return 0, "", nil, err
	}
	if !haveIndex {
		return 0, "", nil, missing(AttrDevIndex)
	}
	return idx, name, tab, nil
}

// decodeRes decodes a per-device resource dump: each message carries the device handle and a
// table nest of entry nests, and a large table continues in the next message.
func decodeRes[T any](b []byte, cmd, table, entry uint16, fill func(d *values, idx uint32, name string, e []byte, obj *T) error) ([]T, error) {
	// Entries take at least 40 bytes on the wire, so this capacity never overshoots much and
	// saves most of the regrowth on a dump of 100k objects.
	out := make([]T, 0, len(b)/64)
	var d values
	n := 0
	err := walkDump(b, MsgType(cmd), func(p []byte) error {
		idx, name, tab, err := d.device(p, table)
		if err != nil {
			return err
		}
		entries := attrs{b: tab}
		for t, e, ok := entries.next(); ok; t, e, ok = entries.next() {
			if t != entry {
				continue
			}
			out = append(out, *new(T))
			if err := fill(&d, idx, name, e, &out[len(out)-1]); err != nil {
				return fmt.Errorf("%s %d: %w", attrName(entry), n, err)
			}
			n++
		}
		return entries.err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeQPs(b []byte) ([]QP, error) {
	return decodeRes(b, CmdResQPGet, AttrResQP, AttrResQPEntry, fillQP)
}

func decodeCQs(b []byte) ([]CQ, error) {
	return decodeRes(b, CmdResCQGet, AttrResCQ, AttrResCQEntry, fillCQ)
}

// In raw mode an entry holds only what the driver put in it: RES_RAW, with no object number.
func decodeQPsRaw(b []byte) ([]Raw, error) {
	return decodeRes(b, CmdResQPGetRaw, AttrResQP, AttrResQPEntry, fillRaw)
}

func decodeCQsRaw(b []byte) ([]Raw, error) {
	return decodeRes(b, CmdResCQGetRaw, AttrResCQ, AttrResCQEntry, fillRaw)
}

// DecodeQPsRaw decodes a raw QP dump reply (exported for fuzzing and tools).
func DecodeQPsRaw(b []byte) ([]Raw, error) { return decodeQPsRaw(b) }

// DecodeCQsRaw decodes a raw CQ dump reply.
func DecodeCQsRaw(b []byte) ([]Raw, error) { return decodeCQsRaw(b) }

func decodeMRs(b []byte) ([]MR, error) {
	return decodeRes(b, CmdResMRGet, AttrResMR, AttrResMREntry, fillMR)
}

func decodePDs(b []byte) ([]PD, error) {
	return decodeRes(b, CmdResPDGet, AttrResPD, AttrResPDEntry, fillPD)
}
