package inventory

import (
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// gidRow is one entry of a RoCE port's GID table, written to sysfs and given by the verbs query.
type gidRow struct {
	index   int
	gid     [16]byte
	typ     uint32
	netdev  string
	ifindex uint32
}

func v4mapped(a, b, c, d byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: a, 13: b, 14: c, 15: d}
}

// A table with holes (indexes 2-3 freed by address churn), a VLAN upper device and both GID types.
var roceTable = []gidRow{
	{0, [16]byte{0: 0xfe, 1: 0x80, 8: 0x50, 9: 0x54, 15: 1}, 1, "eth0", 2},
	{1, [16]byte{0: 0xfe, 1: 0x80, 8: 0x50, 9: 0x54, 15: 1}, 2, "eth0", 2},
	{4, v4mapped(10, 0, 2, 15), 1, "eth0", 2},
	{5, v4mapped(10, 0, 2, 15), 2, "eth0", 2},
	{6, v4mapped(10, 100, 0, 1), 2, "eth0.100", 7},
}

const rxeDir = "sys/devices/virtual/infiniband/rxe0"

// roceHost is an rxe device whose 64-entry GID table is in sysfs; verbs answers Host.VerbsDevices.
func roceHost(t *testing.T, verbs func() ([]host.VerbsDevice, string, error), reads *atomic.Int32) *host.Host {
	tr := tree{t, t.TempDir()}
	tr.w(rxeDir+"/node_type", "1: CA\n")
	tr.w(rxeDir+"/ports/1/link_layer", "Ethernet\n")
	for i := range 64 {
		tr.w(rxeDir+"/ports/1/gids/"+strconv.Itoa(i), "0000:0000:0000:0000:0000:0000:0000:0000\n")
	}
	for _, r := range roceTable {
		n := strconv.Itoa(r.index)
		tr.w(rxeDir+"/ports/1/gids/"+n, host.FormatGID(r.gid)+"\n")
		tr.w(rxeDir+"/ports/1/gid_attrs/types/"+n, GIDTypeName(r.typ)+"\n")
		tr.w(rxeDir+"/ports/1/gid_attrs/ndevs/"+n, r.netdev+"\n")
	}
	tr.l("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0")
	h, err := host.New(host.Options{Root: tr.r, Kind: host.KindRoot, VerbsDevices: verbs,
		Observe: func(string) { reads.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func verbsTable() []host.VerbsGID {
	var out []host.VerbsGID
	for _, r := range roceTable {
		out = append(out, host.VerbsGID{Port: 1, Index: r.index, GID: host.FormatGID(r.gid), Type: r.typ, Ifindex: r.ifindex})
	}
	// Another port's entry must not land on port 1.
	return append(out, host.VerbsGID{Port: 2, Index: 0, GID: host.FormatGID(v4mapped(10, 9, 9, 9)), Type: 2, Ifindex: 9})
}

// The GID table from the verbs query gives the inventory the sysfs walk gives, with one sysfs
// read per netdev instead of three per entry; a device the query did not read, a query that
// failed and one slower than VerbsWait all leave the table to sysfs.
func TestGIDTableFromVerbs(t *testing.T) {
	var sysReads atomic.Int32
	want := Discover(roceHost(t, nil, &sysReads)).Device("rxe0").Ports[0]
	if len(want.GIDs) != len(roceTable) || len(want.Netdevs) != 2 {
		t.Fatalf("sysfs walk: %+v", want)
	}
	old := VerbsWait
	t.Cleanup(func() { VerbsWait = old })
	VerbsWait = 200 * time.Millisecond
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })

	for _, tc := range []struct {
		name      string
		verbs     func() ([]host.VerbsDevice, string, error)
		fromVerbs bool
	}{
		{"table read", func() ([]host.VerbsDevice, string, error) {
			return []host.VerbsDevice{{Name: "rxe0", GIDsRead: true, GIDs: verbsTable()}}, "", nil
		}, true},
		{"not read (older library)", func() ([]host.VerbsDevice, string, error) {
			return []host.VerbsDevice{{Name: "rxe0", GIDError: "libibverbs has no ibv_query_gid_table"}}, "", nil
		}, false},
		{"device failed", func() ([]host.VerbsDevice, string, error) {
			return []host.VerbsDevice{{Name: "rxe0", Error: "ibv_open_device: EIO", GIDsRead: true}}, "", nil
		}, false},
		{"no library", func() ([]host.VerbsDevice, string, error) { return nil, "libibverbs.so.1 not found", nil }, false},
		{"query hangs", func() ([]host.VerbsDevice, string, error) { <-block; return nil, "", nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int32
			h := roceHost(t, tc.verbs, &reads)
			got := DiscoverWith(h, Options{VerbsGIDs: true}).Device("rxe0").Ports[0]
			// reads is not part of what a port says.
			got.reads, want.reads = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("port differs from the sysfs walk:\n got %+v\nwant %+v", got, want)
			}
			if n := reads.Load(); tc.fromVerbs != (n < sysReads.Load()/4) {
				t.Errorf("%d reads (the sysfs walk takes %d); from verbs: %v", n, sysReads.Load(), tc.fromVerbs)
			}
		})
	}
}

func TestGIDTypeName(t *testing.T) {
	for typ, want := range map[uint32]string{0: "IB/RoCE v1", 1: "IB/RoCE v1", 2: "RoCE v2", 3: "Invalid GID type"} {
		if got := GIDTypeName(typ); got != want {
			t.Errorf("%d: %q, want %q", typ, got, want)
		}
	}
	if s := fmt.Sprint(host.FormatGID(v4mapped(10, 0, 2, 15))); s != "0000:0000:0000:0000:0000:ffff:0a00:020f" || !ValidGID(s) {
		t.Errorf("FormatGID: %s", s)
	}
}
