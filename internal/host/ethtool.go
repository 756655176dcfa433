package host

import (
	"fmt"
	"strings"
)

// EthtoolStats returns a netdev's driver statistics as `ethtool -S` shows them (the driver's own
// error and DMA-mapping counters, which sysfs does not expose), read live through the
// ETHTOOL_GSTATS ioctl or replayed from a snapshot's ethtool/<netdev>.json.
func (h *Host) EthtoolStats(netdev string) (map[string]uint64, error) {
	if err := ValidNetdevName(netdev); err != nil {
		return nil, err
	}
	end := h.begin("ethtool -S " + netdev)
	st, err := h.ethtool(netdev)
	end()
	if h.obs != nil {
		h.obs.EthtoolRead(netdev, st, err)
	}
	return st, err
}

// ValidNetdevName refuses names a netdev cannot have (the kernel's dev_valid_name: 1-15 bytes,
// no '/', ':' or white space, not "." or ".."), so a name can be used as a file name safely.
func ValidNetdevName(n string) error {
	if n == "" || len(n) > 15 || n == "." || n == ".." || strings.ContainsAny(n, "/: \t\n") {
		return fmt.Errorf("%q is not a valid netdev name", n)
	}
	return nil
}
