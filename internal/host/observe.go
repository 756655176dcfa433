package host

// Observer is told of every answer a Host gives. `rdmadiag record` runs the checks through an
// observed host and keeps what they asked for, so the checks themselves are the recording's
// question list and a new check needs no change to the recorder. Calls may come from several
// goroutines at once (the checks run concurrently).
type Observer interface {
	// FileRead: a read of p returned data, or err (an errno the host answered, a missing file).
	FileRead(p string, data []byte, err error)
	// Listed: the directory p was listed.
	Listed(p string)
	// Touched: p was resolved, stat'ed or its link read (Realpath, Lstat, Readlink, Exists),
	// whether or not it exists.
	Touched(p string)
	// EthtoolRead: the driver statistics of a netdev were asked for.
	EthtoolRead(netdev string, stats map[string]uint64, err error)
}

// Observed returns a view of h that tells o of every read and passes every RDMA netlink,
// devlink and ethtool netlink exchange through the connections wrap returns (a recorder); h itself is unchanged and
// both views share the record of reads in progress.
func (h *Host) Observed(o Observer, wrap func(which string, c NetlinkConn) NetlinkConn) *Host {
	v := *h
	v.obs = o
	if t, ok := h.nl.(trackedConn); ok {
		v.nl = trackedConn{wrap("netlink", t.NetlinkConn), &v, t.what}
	}
	if t, ok := h.dl.(trackedConn); ok {
		v.dl = trackedConn{wrap("devlink", t.NetlinkConn), &v, t.what}
	}
	if t, ok := h.enl.(trackedConn); ok {
		v.enl = trackedConn{wrap("ethtool", t.NetlinkConn), &v, t.what}
	}
	if t, ok := h.dcb.(trackedConn); ok {
		v.dcb = trackedConn{wrap("dcb", t.NetlinkConn), &v, t.what}
	}
	return &v
}
