package live

import (
	"fmt"

	"github.com/safchain/ethtool"
)

// EthtoolStats reads a netdev's statistics with safchain/ethtool (a maintained ioctl wrapper).
func EthtoolStats(netdev string) (map[string]uint64, error) {
	st, err := ethtool.Stats(netdev)
	if err != nil {
		return nil, fmt.Errorf("ethtool -S %s: %w", netdev, err)
	}
	return st, nil
}
