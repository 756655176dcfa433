package pcie

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

func milli(v int64) *int64 { return &v }

func TestJudgeSensor(t *testing.T) {
	for _, c := range []struct {
		name string
		s    sensor
		want report.Severity
	}{
		{"cool, crit only (mlx5)", sensor{input: 60000, crit: milli(105000), highest: milli(70000)}, report.OK},
		{"at crit", sensor{input: 105000, crit: milli(105000)}, report.Critical},
		{"above max below crit (bnxt_en)", sensor{input: 96000, max: milli(95000), crit: milli(105000), emergency: milli(110000)}, report.Warning},
		{"emergency", sensor{input: 111000, max: milli(95000), crit: milli(105000), emergency: milli(110000)}, report.Critical},
		{"crit alarm below threshold", sensor{input: 90000, crit: milli(105000), critAlarm: true}, report.Critical},
		{"max alarm only", sensor{input: 50000, maxAlarm: true}, report.Warning},
		{"reached crit since reset", sensor{input: 70000, crit: milli(105000), highest: milli(106000)}, report.Warning},
		{"no thresholds", sensor{input: 120000}, report.OK},
		{"unreadable", sensor{err: errTest}, report.Unknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.s.label = "mlx5 sensor0"
			if got, why := judgeSensor(c.s); got != c.want {
				t.Errorf("judgeSensor = %s (%q), want %s", got, why, c.want)
			}
		})
	}
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errTest = testErr("read temp1_input: input/output error")

func TestTempChannel(t *testing.T) {
	for name, want := range map[string]int{"temp1_input": 1, "temp12_input": 12, "temp_input": 0, "temp1_crit": 0, "in0_input": 0, "tempx_input": 0, "temp0_input": 0} {
		if got, ok := tempChannel(name); got != want || ok != (want > 0) {
			t.Errorf("tempChannel(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}
