// Package port holds the port-layer checks: logical and physical state, rate and width,
// addressing (LID and subnet manager on InfiniBand, GIDs, netdev and MTU on RoCE) and the error
// counters, read from /sys/class/infiniband/<dev>/ports/<n>.
package port

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseLID reads lid and sm_lid ("0x%x").
func ParseLID(s string) (uint32, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 32)
	if err != nil || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return 0, fmt.Errorf("LID %q is not 0x-prefixed hex", s)
	}
	return uint32(v), nil
}

// ParseCounter reads one counter file ("%llu"). Virtual functions without a PMA print
// "N/A (no PMA)"; that is reported as ErrNoPMA, not as a garbled file.
func ParseCounter(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "N/A") {
		return 0, ErrNoPMA
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter value %q is not a decimal number", truncate(s, 40))
	}
	return v, nil
}

// ErrNoPMA marks a counter the function does not provide (node_exporter#966: VFs print
// "N/A (no PMA)").
var ErrNoPMA = fmt.Errorf("not provided by this function (no PMA)")

// GID is one GID table entry with its attributes.
type GID struct {
	Index  int
	Addr   string // as the kernel prints it: eight groups of four hex digits
	Type   string // "RoCE v2", "IB/RoCE v1"
	Netdev string
}

// Zero reports an unused entry (the kernel prints a zero GID for invalid entries).
func (g GID) Zero() bool {
	return strings.Trim(g.Addr, "0:") == ""
}

// IPBased reports whether the GID carries an IP address (IPv4-mapped ::ffff:a.b.c.d or a
// non-link-local IPv6 address), i.e. can be routed; link-local fe80:: GIDs are derived from the
// MAC address and exist without any IP configuration.
func (g GID) IPBased() bool {
	a := strings.ToLower(g.Addr)
	if g.Zero() || strings.HasPrefix(a, "fe80:") {
		return false
	}
	return true
}

// IPv4 returns the dotted address of an IPv4-mapped GID, or "".
func (g GID) IPv4() string {
	a := strings.ToLower(g.Addr)
	const prefix = "0000:0000:0000:0000:0000:ffff:"
	if !strings.HasPrefix(a, prefix) || len(a) != len(prefix)+9 {
		return ""
	}
	hi, err1 := strconv.ParseUint(a[len(prefix):len(prefix)+4], 16, 16)
	lo, err2 := strconv.ParseUint(a[len(prefix)+5:], 16, 16)
	if err1 != nil || err2 != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.%d", hi>>8, hi&0xff, lo>>8, lo&0xff)
}

// ValidGID checks the "%pI6" full form: eight groups of four hex digits.
func ValidGID(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 8 {
		return false
	}
	for _, p := range parts {
		if len(p) != 4 {
			return false
		}
		if _, err := strconv.ParseUint(p, 16, 16); err != nil {
			return false
		}
	}
	return true
}

// roceOverhead is what iboe_get_mtu() (include/rdma/ib_addr.h) subtracts from the netdev MTU:
// GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 bytes.
const roceOverhead = 96

// RoCEMTU returns the IB MTU a RoCE port derives from its netdev's MTU, as iboe_get_mtu() does:
// the largest of 4096, 2048, 1024, 512, 256 that fits after the headers; 0 if none fits.
func RoCEMTU(netdevMTU int) int {
	m := netdevMTU - roceOverhead
	for _, v := range []int{4096, 2048, 1024, 512, 256} {
		if m >= v {
			return v
		}
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
