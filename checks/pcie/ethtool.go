package pcie

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/relit"
)

// DriverCounter is one non-zero driver statistic on the DMA path.
type DriverCounter struct {
	Name  string
	Value uint64
	// Kind is "pcie" (the NIC's own PCIe signal-integrity count) or "dma" (DMA mapping,
	// buffer allocation or queue-entry errors).
	Kind string
}

// perQueue matches per-channel copies of a counter (mlx5 "rx3_wqe_err", "tx0_cqe_err"); the
// aggregate is judged instead so that nothing is counted twice.
var perQueue = relit.MustCompile(`^(rx|tx|ch|xdp)[0-9]+_`)

// DMACounters picks, from a netdev's `ethtool -S` statistics, the non-zero counters that speak of
// the PCIe link or the DMA path, sorted by name. The names are mlx5e's
// (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst: rx/tx_pci_signal_integrity,
// outbound_pci_buffer_overflow, rx_wqe_err, tx_cqe_err, rx_buff_alloc_err) plus any driver's
// "*dma*err*"/"*dma*fail*" counters (DMA-mapping failures).
func DMACounters(st map[string]uint64) []DriverCounter {
	var out []DriverCounter
	for n, v := range st {
		if v == 0 || perQueue.MatchString(n) {
			continue
		}
		kind := ""
		switch {
		case n == "rx_pci_signal_integrity" || n == "tx_pci_signal_integrity":
			kind = "pcie"
		case n == "outbound_pci_buffer_overflow",
			strings.HasSuffix(n, "_wqe_err"), strings.HasSuffix(n, "_cqe_err"), strings.HasSuffix(n, "_buff_alloc_err"),
			strings.Contains(n, "dma") && (strings.Contains(n, "err") || strings.Contains(n, "fail")):
			kind = "dma"
		}
		if kind != "" {
			out = append(out, DriverCounter{Name: n, Value: v, Kind: kind})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func countersString(cs []DriverCounter) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s=%d", c.Name, c.Value)
	}
	return strings.Join(parts, ", ")
}
