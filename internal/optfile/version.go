package optfile

import (
	"fmt"
	"strconv"
	"strings"
)

// FirmwareVersion is an NVIDIA/Mellanox firmware version MAJOR.MINOR.SUBMINOR, as the kernel's
// fw_ver file shows it ("%d.%d.%04d" from the firmware's 16-bit fw_rev fields in mlx5's
// get_dev_fw_str, drivers/infiniband/hw/mlx5/main.c). MAJOR names the device family.
type FirmwareVersion struct{ Major, Minor, Sub int }

// ParseFirmwareVersion reads a firmware version. Each field is a decimal number below 65536 (the
// firmware reports 16-bit fields); anything else is an error, never a guess.
func ParseFirmwareVersion(s string) (FirmwareVersion, error) {
	v, reason := parseVersion(s)
	if reason != "" {
		return FirmwareVersion{}, fmt.Errorf("firmware version %q: %s", s, reason)
	}
	return v, nil
}

func parseVersion(s string) (FirmwareVersion, string) {
	f := strings.Split(strings.TrimSpace(s), ".")
	if len(f) != 3 {
		return FirmwareVersion{}, "want MAJOR.MINOR.SUBMINOR"
	}
	var n [3]int
	for i, x := range f {
		if x == "" || len(x) > 5 || strings.TrimLeft(x, "0123456789") != "" {
			return FirmwareVersion{}, fmt.Sprintf("field %q is not a number", x)
		}
		v, err := strconv.Atoi(x)
		if err != nil || v > 0xffff {
			return FirmwareVersion{}, fmt.Sprintf("field %q is out of range", x)
		}
		n[i] = v
	}
	return FirmwareVersion{n[0], n[1], n[2]}, ""
}

// older orders versions of one family.
func (v FirmwareVersion) older(w FirmwareVersion) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Sub < w.Sub
}

// version decodes a firmware version string; family, when not 0, is the major it must have.
func (c checker) version(path string, v *value, family int) (FirmwareVersion, error) {
	want := `a firmware version "MAJOR.MINOR.SUBMINOR" like "28.39.1002"`
	if family != 0 {
		want = fmt.Sprintf(`a firmware version "%d.MINOR.SUBMINOR" (family %d)`, family, family)
	}
	s, err := c.str(path, v, want)
	if err != nil {
		return FirmwareVersion{}, err
	}
	fv, reason := parseVersion(s)
	if reason != "" {
		if strings.HasPrefix(reason, "field") {
			return FirmwareVersion{}, c.fail(path, "want %s, got %s (%s)", want, v.describe(), reason)
		}
		return FirmwareVersion{}, c.want(path, want, v)
	}
	if strings.TrimSpace(s) != s {
		return FirmwareVersion{}, c.want(path, want+" without surrounding white space", v)
	}
	if family != 0 && fv.Major != family {
		return FirmwareVersion{}, c.want(path, want, v)
	}
	return fv, nil
}
