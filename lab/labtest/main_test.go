package main

import (
	"strconv"
	"testing"
)

// The client output of Debian 12's ib_write_bw (perftest 4.5-0.17) in the lab.
const ibWriteBWOut = ` #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      1000             32.40              26.76  		   0.000428
---------------------------------------------------------------------------------------
`

func TestBWAverage(t *testing.T) {
	m := bwAverage.FindStringSubmatch(ibWriteBWOut)
	if m == nil {
		t.Fatal("no result line found")
	}
	if v, err := strconv.ParseFloat(m[4], 64); err != nil || v != 26.76 {
		t.Errorf("BW average = %q (%v), want 26.76", m[4], err)
	}
	if bwAverage.MatchString(" #bytes     #iterations    BW peak[MB/sec]\n") {
		t.Error("the header matched as a result line")
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		runs []Run
		want float64
	}{
		{"none", nil, 0},
		{"odd", []Run{{MiBps: 3}, {MiBps: 1}, {MiBps: 2}}, 2},
		{"even", []Run{{MiBps: 4}, {MiBps: 1}, {MiBps: 2}, {MiBps: 3}}, 2.5},
		{"failed runs left out", []Run{{MiBps: 9, Error: "client: exit status 1"}, {MiBps: 0}, {MiBps: 5}}, 5},
	}
	for _, tt := range tests {
		if got := median(tt.runs); got != tt.want {
			t.Errorf("%s: median = %v, want %v", tt.name, got, tt.want)
		}
	}
}
