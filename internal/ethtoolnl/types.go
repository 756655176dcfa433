package ethtoolnl

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// FECMode is a FEC encoding as ETHTOOL_A_FEC_ACTIVE names it: the index of its link mode bit
// (ETHTOOL_LINK_MODE_FEC_*_BIT in include/uapi/linux/ethtool.h).
type FECMode uint32

// FEC modes.
const (
	FECOff   FECMode = unix.ETHTOOL_LINK_MODE_FEC_NONE_BIT  // 49
	FECRS    FECMode = unix.ETHTOOL_LINK_MODE_FEC_RS_BIT    // 50, Reed-Solomon (Clause 91/134)
	FECBaseR FECMode = unix.ETHTOOL_LINK_MODE_FEC_BASER_BIT // 51, Fire Code (Clause 74)
	FECLLRS  FECMode = unix.ETHTOOL_LINK_MODE_FEC_LLRS_BIT  // 74, low-latency RS
)

// String names the mode as `ethtool --show-fec` does.
func (m FECMode) String() string {
	switch m {
	case 0:
		return "none reported"
	case FECOff:
		return "Off"
	case FECRS:
		return "RS"
	case FECBaseR:
		return "BaseR"
	case FECLLRS:
		return "LLRS"
	}
	return fmt.Sprintf("link mode bit %d", uint32(m))
}

// FECStat is one FEC statistic: the total and, where the driver counts per lane, each lane.
// The kernel sends the lanes only when the driver fills them, and then sums them into the total
// (fec_stats_recalc in net/ethtool/fec.c).
type FECStat struct {
	Total uint64
	Lanes []uint64
}

// FEC is the answer to FEC_GET with ETHTOOL_FLAG_STATS (`ethtool -I --show-fec <dev>`).
type FEC struct {
	Ifindex uint32
	Ifname  string
	// Active is the FEC in use; 0 when the kernel sent none (link down, or a driver that does
	// not say).
	Active FECMode
	Auto   bool
	// Corrected and Uncorrectable count FEC blocks (codewords), CorrectedBits bits; nil when the
	// driver does not report the statistic (no get_fec_stats, or a field it leaves unset).
	Corrected, Uncorrectable, CorrectedBits *FECStat
}

// HasStats reports whether the driver reported any FEC statistic.
func (f *FEC) HasStats() bool {
	return f.Corrected != nil || f.Uncorrectable != nil || f.CorrectedBits != nil
}

// LinkModes is what LINKMODES_GET says of the link in use (`ethtool <dev>` speed, duplex, lanes).
type LinkModes struct {
	Ifindex uint32
	Ifname  string
	// SpeedMbps is 0 when unknown (link down: SPEED_UNKNOWN).
	SpeedMbps uint32
	// Lanes is 0 when the driver or kernel (before 5.11) does not say.
	Lanes   uint32
	Duplex  uint8
	Autoneg bool
}

// EEPROMPage addresses a read of a module's EEPROM (ETHTOOL_A_MODULE_EEPROM_*): the I2C address
// (0x50 for SFF-8636 and CMIS modules, 0x50/0x51 for SFF-8472), the page and bank, and a range
// that stays within one half page (offsets 0-127 are the lower page, shared by every page;
// 128-255 the selected upper page).
type EEPROMPage struct {
	I2CAddr, Page, Bank uint8
	Offset, Length      uint32
}

func (p EEPROMPage) String() string {
	return fmt.Sprintf("i2c 0x%02x page 0x%02x bank %d offset %d length %d", p.I2CAddr, p.Page, p.Bank, p.Offset, p.Length)
}

// Validate refuses what the kernel refuses (eeprom_validate in net/ethtool/eeprom.c): a length
// outside 1-128, a range crossing the half-page boundary or the page end, an upper page read
// below offset 128.
func (p EEPROMPage) Validate() error {
	switch {
	case p.Length == 0 || p.Length > maxEEPROMReadLength:
		return fmt.Errorf("module EEPROM read of %d bytes: must be 1-%d", p.Length, maxEEPROMReadLength)
	case p.Offset >= pageEnd || p.Offset+p.Length > pageEnd:
		return fmt.Errorf("module EEPROM read at offset %d, %d bytes: beyond the %d-byte page", p.Offset, p.Length, pageEnd)
	case p.Offset < lowerPageEnd && p.Offset+p.Length > lowerPageEnd:
		return fmt.Errorf("module EEPROM read at offset %d, %d bytes: crosses the half-page boundary at %d", p.Offset, p.Length, lowerPageEnd)
	case p.Page != 0 && p.Offset < lowerPageEnd:
		return fmt.Errorf("module EEPROM read of page 0x%02x at offset %d: only page 0 has a lower half", p.Page, p.Offset)
	}
	return nil
}

// RecordedPages are the module EEPROM reads `rdmadiag record` captures for every RDMA netdev:
// the lower page and upper pages 00h-03h (SFF-8636 and CMIS identification, thresholds, lane
// monitors) and 10h-11h (CMIS lane control and flags), each a whole half page at I2C address 0x50.
// PageReader serves any read inside them from these, so a snapshot answers every such read.
var RecordedPages = []EEPROMPage{
	{I2CAddr: 0x50, Page: 0x00, Offset: 0, Length: 128},
	{I2CAddr: 0x50, Page: 0x00, Offset: 128, Length: 128},
	{I2CAddr: 0x50, Page: 0x01, Offset: 128, Length: 128},
	{I2CAddr: 0x50, Page: 0x02, Offset: 128, Length: 128},
	{I2CAddr: 0x50, Page: 0x03, Offset: 128, Length: 128},
	{I2CAddr: 0x50, Page: 0x10, Offset: 128, Length: 128},
	{I2CAddr: 0x50, Page: 0x11, Offset: 128, Length: 128},
}

// ErrMalformed is wrapped by every decoding error caused by the bytes themselves, so that a
// garbled snapshot is told apart from a kernel's refusal (a syscall.Errno).
var ErrMalformed = errors.New("malformed ethtool netlink reply")

// ErrNoEthtool means the kernel has no ethtool generic netlink family (before 5.6, or built
// without CONFIG_ETHTOOL_NETLINK).
var ErrNoEthtool = errors.New("no ethtool generic netlink family in this kernel")

// Error is a failed ethtool request: the operation, the netdev and the cause (a syscall.Errno
// for a kernel refusal: EOPNOTSUPP when the driver or kernel lacks the operation, ENODEV when
// the netdev is gone; ErrMalformed; host.ErrNotRecorded from a snapshot without the answer).
type Error struct {
	Op     string // "FEC_GET", "LINKMODES_GET", "MODULE_EEPROM_GET"
	Ifname string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("ethtool netlink %s %s: %v", e.Op, e.Ifname, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errno returns the kernel error code err carries, if any.
func Errno(err error) (syscall.Errno, bool) {
	var en syscall.Errno
	ok := errors.As(err, &en)
	return en, ok
}
