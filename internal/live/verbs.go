package live

import (
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// queryVerbsDevices opens each device, asks ibv_query_device and the GID table, and closes it
// again. A device that
// fails is listed with its error; a missing library or device list is the returned error text.
func queryVerbsDevices() ([]host.VerbsDevice, string) {
	lib, err := verbs.Load()
	if err != nil {
		return nil, err.Error()
	}
	var out []host.VerbsDevice
	err = lib.EachDevice(func(in verbs.DeviceInfo, ctx *verbs.Context, err error) {
		vd := host.VerbsDevice{Name: in.Name}
		if err != nil {
			vd.Error = err.Error()
			out = append(out, vd)
			return
		}
		a, err := ctx.QueryDevice()
		if err != nil {
			vd.Error = err.Error()
		} else {
			vd.MaxQP, vd.MaxQPWR, vd.MaxCQ, vd.MaxCQE = int64(a.MaxQP), int64(a.MaxQPWR), int64(a.MaxCQ), int64(a.MaxCQE)
			vd.MaxSRQ, vd.MaxMR, vd.MaxPD = int64(a.MaxSRQ), int64(a.MaxMR), int64(a.MaxPD)
			vd.NumCompVectors = ctx.NumCompVectors()
			readGIDTable(ctx, int(a.PhysPortCnt), &vd)
		}
		if err := ctx.Close(); err != nil && vd.Error == "" {
			vd.Error = err.Error()
		}
		out = append(out, vd)
	})
	if err != nil {
		return nil, err.Error()
	}
	if out == nil {
		out = []host.VerbsDevice{}
	}
	return out, ""
}

// readGIDTable asks the whole GID table of an open device: the ports' gid_tbl_len give the room
// the kernel requires (rdma_query_gid_table, drivers/infiniband/core/cache.c). Failures are
// recorded and leave GIDsRead false, so the inventory reads the table from sysfs instead.
func readGIDTable(ctx *verbs.Context, ports int, vd *host.VerbsDevice) {
	room := 0
	for p := 1; p <= ports; p++ {
		pa, err := ctx.QueryPort(uint8(p))
		if err != nil {
			vd.GIDError = err.Error()
			return
		}
		room += max(int(pa.GIDTblLen), 0)
	}
	if room == 0 {
		vd.GIDsRead = true // no port has a table
		return
	}
	entries, err := ctx.GIDTable(room)
	if err != nil {
		vd.GIDError = err.Error()
		return
	}
	vd.GIDsRead = true
	for _, e := range entries {
		vd.GIDs = append(vd.GIDs, host.VerbsGID{Port: int(e.PortNum), Index: int(e.GIDIndex),
			GID: host.FormatGID(e.GID), Type: e.GIDType, Ifindex: e.NdevIfindex})
	}
}
