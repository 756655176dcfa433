package live

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/safchain/ethtool"
)

// EthtoolStats reads a netdev's statistics with safchain/ethtool (a maintained ioctl wrapper).
func EthtoolStats(netdev string) (map[string]uint64, error) {
	return noStatsIsEmpty(netdev)(ethtool.Stats(netdev))
}

// noStatsIsEmpty turns the kernel's EOPNOTSUPP into an empty set of statistics: a driver without
// get_sset_count (netdevsim; lab scenario ethtool-netdevsim) has none, and ETHTOOL_GSTRINGS says
// so with EOPNOTSUPP (__ethtool_get_sset_count in net/ethtool/ioctl.c), where `ethtool -S` prints
// "no stats available". An empty set is what a snapshot records and replays for it too.
func noStatsIsEmpty(netdev string) func(map[string]uint64, error) (map[string]uint64, error) {
	return func(st map[string]uint64, err error) (map[string]uint64, error) {
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP):
			return map[string]uint64{}, nil
		case err != nil:
			return nil, fmt.Errorf("ethtool -S %s: %w", netdev, err)
		}
		return st, nil
	}
}
