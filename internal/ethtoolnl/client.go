// Package ethtoolnl speaks the ethtool generic netlink family (Linux 5.6+,
// include/uapi/linux/ethtool_netlink.h, Documentation/networking/ethtool-netlink.rst): the FEC
// in use with its statistics (FEC_GET with ETHTOOL_FLAG_STATS, 5.14+), the link's speed and lanes
// (LINKMODES_GET) and module EEPROM pages (MODULE_EEPROM_GET, 5.13+), the sources of
// `ethtool -I --show-fec`, `ethtool <dev>` and `ethtool -m`.
//
// Like internal/devlink it works over a host.NetlinkConn on NETLINK_GENERIC: a live socket, a
// recorder that saves each raw reply in a snapshot, or a replay of one. The family id is
// resolved through the same connection (CTRL_CMD_GETFAMILY to nlctrl), so that a snapshot
// replays the id its host assigned, whatever the analysing kernel would assign.
//
// It is written here because the Go ethtool libraries (safchain/ethtool, mdlayher/ethtool) do
// not return the raw reply bytes a snapshot must store, and the ioctl interface has no FEC
// statistics or paged module EEPROM reads.
package ethtoolnl

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// Client issues ethtool netlink queries over a NETLINK_GENERIC connection. It is safe for
// concurrent use if its connection is.
type Client struct {
	conn host.NetlinkConn

	once   sync.Once
	family uint16
	famErr error
}

// NewClient returns a client over conn. A nil conn (a host without recorded ethtool answers)
// makes every query fail with an error wrapping host.ErrNotRecorded.
func NewClient(conn host.NetlinkConn) *Client { return &Client{conn: conn} }

// FamilyRequest asks nlctrl for the ethtool family's id.
func FamilyRequest() host.Request { return devlink.FamilyRequest(FamilyName) }

// FECRequest asks for ifname's FEC parameters and statistics (`ethtool -I --show-fec`).
func FECRequest(fam uint16, ifname string) host.Request {
	return host.Request{Type: fam, Payload: append(genlHdr(CmdFECGet), requestHeader(ifname, FlagStats)...)}
}

// LinkModesRequest asks for ifname's link modes, speed and lanes.
func LinkModesRequest(fam uint16, ifname string) host.Request {
	return host.Request{Type: fam, Payload: append(genlHdr(CmdLinkModesGet), requestHeader(ifname, 0)...)}
}

// ModuleEEPROMRequest asks for one read of ifname's module EEPROM. Page, bank and I2C address
// are always sent (kernels before 5.14 require PAGE).
func ModuleEEPROMRequest(fam uint16, ifname string, p EEPROMPage) host.Request {
	b := append(genlHdr(CmdModuleEEPROMGet), requestHeader(ifname, 0)...)
	b = netlinkraw.AppendAttr(b, AttrEEPROMOffset, ne.AppendUint32(nil, p.Offset))
	b = netlinkraw.AppendAttr(b, AttrEEPROMLength, ne.AppendUint32(nil, p.Length))
	b = netlinkraw.AppendAttr(b, AttrEEPROMPage, []byte{p.Page})
	b = netlinkraw.AppendAttr(b, AttrEEPROMBank, []byte{p.Bank})
	b = netlinkraw.AppendAttr(b, AttrEEPROMI2CAddr, []byte{p.I2CAddr})
	return host.Request{Type: fam, Payload: b}
}

func (c *Client) exchange(req host.Request) ([]byte, error) {
	if c.conn == nil {
		return nil, fmt.Errorf("no ethtool netlink connection: %w", host.ErrNotRecorded)
	}
	return c.conn.Exchange(req)
}

// Family returns the ethtool family id, resolved once per Client. A kernel without the family
// gives an error wrapping ErrNoEthtool and ENOENT.
func (c *Client) Family() (uint16, error) {
	c.once.Do(func() {
		b, err := c.exchange(FamilyRequest())
		if err == nil {
			c.family, err = devlink.DecodeFamily(b)
			if errors.Is(err, devlink.ErrMalformed) {
				err = fmt.Errorf("%w: %v", ErrMalformed, err)
			}
		}
		switch {
		case errors.Is(err, syscall.ENOENT):
			c.famErr = fmt.Errorf("resolve generic netlink family %q: %w (%w)", FamilyName, ErrNoEthtool, err)
		case err != nil:
			c.famErr = fmt.Errorf("resolve generic netlink family %q: %w", FamilyName, err)
		}
	})
	return c.family, c.famErr
}

// query resolves the family, sends the request build makes and decodes the reply, wrapping
// every failure in an *Error naming op and ifname.
func query[T any](c *Client, op, ifname string, build func(fam uint16) host.Request, decode func([]byte, uint16) (T, error)) (T, error) {
	var zero T
	if err := host.ValidNetdevName(ifname); err != nil {
		return zero, &Error{Op: op, Ifname: ifname, Err: err}
	}
	fam, err := c.Family()
	if err != nil {
		return zero, &Error{Op: op, Ifname: ifname, Err: err}
	}
	b, err := c.exchange(build(fam))
	if err != nil {
		return zero, &Error{Op: op, Ifname: ifname, Err: err}
	}
	v, err := decode(b, fam)
	if err != nil {
		return zero, &Error{Op: op, Ifname: ifname, Err: err}
	}
	return v, nil
}

// checkName refuses a reply about another netdev: a replay mixed up, or a kernel bug.
func checkName(op, want, got string) error {
	if got != "" && got != want {
		return &Error{Op: op, Ifname: want, Err: fmt.Errorf("reply is about %q: %w", got, ErrMalformed)}
	}
	return nil
}

// FEC reads ifname's FEC mode and statistics. A driver without get_fecparam, or a kernel before
// 5.14, answers EOPNOTSUPP (Errno(err)).
func (c *Client) FEC(ifname string) (*FEC, error) {
	f, err := query(c, "FEC_GET", ifname, func(fam uint16) host.Request { return FECRequest(fam, ifname) }, DecodeFEC)
	if err != nil {
		return nil, err
	}
	if err := checkName("FEC_GET", ifname, f.Ifname); err != nil {
		return nil, err
	}
	return f, nil
}

// LinkModes reads ifname's speed, duplex, lanes and autonegotiation.
func (c *Client) LinkModes(ifname string) (*LinkModes, error) {
	l, err := query(c, "LINKMODES_GET", ifname, func(fam uint16) host.Request { return LinkModesRequest(fam, ifname) }, DecodeLinkModes)
	if err != nil {
		return nil, err
	}
	if err := checkName("LINKMODES_GET", ifname, l.Ifname); err != nil {
		return nil, err
	}
	return l, nil
}

// ModuleEEPROM reads one range of ifname's module EEPROM. A driver without module EEPROM access,
// or a kernel before 5.13, answers EOPNOTSUPP; a port without a module typically EIO or
// ENODEV, as its driver decides. A range the kernel would refuse is refused here with the reason.
func (c *Client) ModuleEEPROM(ifname string, p EEPROMPage) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, &Error{Op: "MODULE_EEPROM_GET", Ifname: ifname, Err: err}
	}
	data, err := query(c, "MODULE_EEPROM_GET", ifname, func(fam uint16) host.Request { return ModuleEEPROMRequest(fam, ifname, p) }, DecodeModuleEEPROM)
	if err != nil {
		return nil, err
	}
	if uint32(len(data)) != p.Length {
		return nil, &Error{Op: "MODULE_EEPROM_GET", Ifname: ifname, Err: fmt.Errorf("%s: %d bytes returned: %w", p, len(data), ErrMalformed)}
	}
	return data, nil
}

// PageReader reads ifname's module EEPROM for the transceiver decoders.
func (c *Client) PageReader(ifname string) *PageReader {
	return &PageReader{c: c, ifname: ifname, halves: map[EEPROMPage]halfPage{}}
}

// PageReader reads module EEPROM ranges of one netdev through whole half pages, each fetched
// once: any range inside RecordedPages is answered from the reads `rdmadiag record` made, so a
// snapshot replays every read a decoder makes within them. The lower half page (offsets 0-127)
// is the same for every page and bank and is always read as page 0, bank 0.
type PageReader struct {
	c      *Client
	ifname string
	mu     sync.Mutex
	halves map[EEPROMPage]halfPage
}

type halfPage struct {
	data []byte
	err  error
}

// ReadPage returns length bytes at offset (0-255, within one 256-byte page view: lower half plus
// the selected upper page) of the given page and bank at i2cAddr.
func (r *PageReader) ReadPage(i2cAddr, page, bank uint8, offset, length uint32) ([]byte, error) {
	if length == 0 || offset >= pageEnd || length > pageEnd-offset {
		return nil, &Error{Op: "MODULE_EEPROM_GET", Ifname: r.ifname,
			Err: fmt.Errorf("read of %d bytes at offset %d: outside the %d-byte page view", length, offset, pageEnd)}
	}
	out := make([]byte, 0, length)
	for off := offset; off < offset+length; {
		half := EEPROMPage{I2CAddr: i2cAddr, Page: page, Bank: bank, Offset: lowerPageEnd, Length: lowerPageEnd}
		if off < lowerPageEnd {
			half = EEPROMPage{I2CAddr: i2cAddr, Offset: 0, Length: lowerPageEnd}
		}
		data, err := r.half(half)
		if err != nil {
			return nil, err
		}
		end := min(offset+length, half.Offset+half.Length)
		out = append(out, data[off-half.Offset:end-half.Offset]...)
		off = end
	}
	return out, nil
}

func (r *PageReader) half(p EEPROMPage) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.halves[p]; ok {
		return h.data, h.err
	}
	data, err := r.c.ModuleEEPROM(r.ifname, p)
	r.halves[p] = halfPage{data, err}
	return data, err
}
