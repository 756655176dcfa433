package driver

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// A line from a text log has no priority: it is picked as an error by its words, never because
// of the neutral level it was given; /dev/kmsg lines are picked by their level.
func TestSevereWithoutLevel(t *testing.T) {
	for _, c := range []struct {
		r    kmsg.Record
		want bool
	}{
		// pocopico/rp-ext issue #129 (https://github.com/pocopico/rp-ext/issues/129).
		{kmsg.Record{Level: kmsg.NeutralLevel, NoLevel: true, Text: "mlx5_core: probe of 0000:01:00.0 failed with error -22"}, true},
		{kmsg.Record{Level: kmsg.NeutralLevel, NoLevel: true, Text: "mlx5_core 0000:01:00.0: handle_hca_cap failed"}, true},
		{kmsg.Record{Level: kmsg.NeutralLevel, NoLevel: true, Text: "mlx5_ib: Unknown symbol ib_register_device (err -2)"}, true},
		{kmsg.Record{Level: kmsg.NeutralLevel, NoLevel: true, Text: "mlx5_core 0000:01:00.0: firmware version: 14.32.1010"}, false},
		{kmsg.Record{Level: 3, Text: "mlx5_core 0000:01:00.0: firmware version: 14.32.1010"}, true},
		{kmsg.Record{Level: 6, Text: "mlx5_core 0000:01:00.0: probe failed"}, false},
	} {
		if got := severe(c.r); got != c.want {
			t.Errorf("severe(%+v) = %v", c.r, got)
		}
	}
}
