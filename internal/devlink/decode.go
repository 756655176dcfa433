package devlink

import "fmt"

// DecodeFamily reads the CTRL_CMD_GETFAMILY reply and returns the family id (the nlmsg_type of
// the family's messages). A kernel without the family answers ENOENT, returned as the errno.
func DecodeFamily(b []byte) (uint16, error) {
	var id uint16
	found := false
	err := walkReply(b, CtrlType, false, func(_ uint8, payload []byte) error {
		a := attrs{b: payload}
		for t, v, ok := a.next(); ok; t, v, ok = a.next() {
			if t == ctrlAttrFamilyID {
				x, err := u16(t, v)
				if err != nil {
					return err
				}
				id, found = x, true
			}
		}
		return a.err
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("family reply without CTRL_ATTR_FAMILY_ID: %w", ErrMalformed)
	}
	return id, nil
}

// handleAttr reads BUS_NAME and DEV_NAME into h; it reports whether t was one of them.
func handleAttr(h *Handle, t uint16, v []byte) bool {
	switch t {
	case AttrBusName:
		h.Bus = str(v)
	case AttrDevName:
		h.Dev = str(v)
	default:
		return false
	}
	return true
}

func checkHandle(h Handle) error {
	if h.Bus == "" || h.Dev == "" {
		return fmt.Errorf("object without BUS_NAME/DEV_NAME (%q): %w", h.String(), ErrMalformed)
	}
	return nil
}

// DecodeDevices reads a DEVLINK_CMD_GET dump of family fam.
func DecodeDevices(b []byte, fam uint16) ([]Handle, error) {
	var out []Handle
	err := walkReply(b, fam, true, func(_ uint8, payload []byte) error {
		var h Handle
		a := attrs{b: payload}
		for t, v, ok := a.next(); ok; t, v, ok = a.next() {
			handleAttr(&h, t, v)
		}
		if a.err != nil {
			return a.err
		}
		if err := checkHandle(h); err != nil {
			return err
		}
		out = append(out, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeInfo reads a DEVLINK_CMD_INFO_GET reply (one message) of family fam.
func DecodeInfo(b []byte, fam uint16) (*Info, error) {
	var info *Info
	err := walkReply(b, fam, false, func(_ uint8, payload []byte) error {
		if info != nil {
			return fmt.Errorf("second info message: %w", ErrMalformed)
		}
		info = &Info{}
		a := attrs{b: payload}
		for t, v, ok := a.next(); ok; t, v, ok = a.next() {
			if handleAttr(&info.Handle, t, v) {
				continue
			}
			var list *[]Version
			switch t {
			case AttrInfoDriverName:
				info.Driver = str(v)
			case AttrInfoSerialNumber:
				info.Serial = str(v)
			case AttrInfoVersionFixed:
				list = &info.Fixed
			case AttrInfoVersionRunning:
				list = &info.Running
			case AttrInfoVersionStored:
				list = &info.Stored
			}
			if list == nil {
				continue
			}
			ver, err := decodeVersion(t, v)
			if err != nil {
				return err
			}
			*list = append(*list, ver)
		}
		if a.err != nil {
			return a.err
		}
		return checkHandle(info.Handle)
	})
	if err != nil {
		return nil, err
	}
	if info == nil {
		return nil, fmt.Errorf("info reply without a message: %w", ErrMalformed)
	}
	return info, nil
}

func decodeVersion(t uint16, v []byte) (Version, error) {
	var ver Version
	var hasName bool
	a := attrs{b: v}
	for it, iv, ok := a.next(); ok; it, iv, ok = a.next() {
		switch it {
		case AttrInfoVersionName:
			ver.Name, hasName = str(iv), true
		case AttrInfoVersionValue:
			ver.Value = str(iv)
		}
	}
	if a.err != nil {
		return Version{}, fmt.Errorf("version nest %d: %w", t, a.err)
	}
	if !hasName {
		return Version{}, fmt.Errorf("version nest %d without INFO_VERSION_NAME: %w", t, ErrMalformed)
	}
	return ver, nil
}

// DecodeReporters reads a DEVLINK_CMD_HEALTH_REPORTER_GET dump of family fam.
func DecodeReporters(b []byte, fam uint16) ([]Reporter, error) {
	var out []Reporter
	err := walkReply(b, fam, true, func(_ uint8, payload []byte) error {
		var r Reporter
		nests := 0
		a := attrs{b: payload}
		for t, v, ok := a.next(); ok; t, v, ok = a.next() {
			if handleAttr(&r.Handle, t, v) {
				continue
			}
			var err error
			switch t {
			case AttrPortIndex:
				r.Port, err = u32(t, v)
				r.HasPort = true
			case AttrHealthReporter:
				nests++
				err = decodeReporterNest(&r, v)
			}
			if err != nil {
				return err
			}
		}
		if a.err != nil {
			return a.err
		}
		if err := checkHandle(r.Handle); err != nil {
			return err
		}
		if nests != 1 || r.Name == "" {
			return fmt.Errorf("reporter message of %s with %d HEALTH_REPORTER nests, name %q: %w", r.Handle, nests, r.Name, ErrMalformed)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decodeReporterNest(r *Reporter, b []byte) error {
	a := attrs{b: b}
	for t, v, ok := a.next(); ok; t, v, ok = a.next() {
		var err error
		var x uint8
		switch t {
		case AttrHealthReporterName:
			r.Name = str(v)
		case AttrHealthReporterState:
			r.State, err = u8(t, v)
		case AttrHealthReporterErrCount:
			r.ErrCount, err = u64(t, v)
		case AttrHealthReporterRecoverCount:
			r.RecoverCount, err = u64(t, v)
		case AttrHealthReporterGracePeriod:
			r.GracePeriod, err = u64(t, v)
			r.HasGracePeriod = true
		case AttrHealthReporterAutoRecover:
			x, err = u8(t, v)
			r.AutoRecover = x != 0
		case AttrHealthReporterAutoDump:
			x, err = u8(t, v)
			r.AutoDump, r.HasAutoDump = x != 0, true
		case AttrHealthReporterDumpTSNs:
			r.DumpTSNs, err = u64(t, v)
		}
		if err != nil {
			return fmt.Errorf("reporter %q: %w", r.Name, err)
		}
	}
	return a.err
}
