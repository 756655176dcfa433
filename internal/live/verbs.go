package live

import (
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// queryVerbsDevices opens each device, asks ibv_query_device and closes it again. A device that
// fails is listed with its error; a missing library or device list is the returned error text.
func queryVerbsDevices() ([]host.VerbsDevice, string) {
	lib, err := verbs.Load()
	if err != nil {
		return nil, err.Error()
	}
	infos, err := lib.Devices()
	if err != nil {
		return nil, err.Error()
	}
	out := make([]host.VerbsDevice, 0, len(infos))
	for _, in := range infos {
		vd := host.VerbsDevice{Name: in.Name}
		ctx, err := lib.OpenDevice(in.Name)
		if err != nil {
			vd.Error = err.Error()
			out = append(out, vd)
			continue
		}
		a, err := ctx.QueryDevice()
		if err != nil {
			vd.Error = err.Error()
		} else {
			vd.MaxQP, vd.MaxQPWR, vd.MaxCQ, vd.MaxCQE = int64(a.MaxQP), int64(a.MaxQPWR), int64(a.MaxCQ), int64(a.MaxCQE)
			vd.MaxSRQ, vd.MaxMR, vd.MaxPD = int64(a.MaxSRQ), int64(a.MaxMR), int64(a.MaxPD)
			vd.NumCompVectors = ctx.NumCompVectors()
		}
		if err := ctx.Close(); err != nil && vd.Error == "" {
			vd.Error = err.Error()
		}
		out = append(out, vd)
	}
	return out, ""
}
