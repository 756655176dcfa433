package checks

import (
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// Records with zoned wall-clock times are aged against the capture; a zoneless syslog stamp is
// local time and can only be compared with the log's own newest line.
func TestLogNow(t *testing.T) {
	last := time.Date(2024, 11, 3, 14, 2, 11, 0, time.UTC)
	capture := last.Add(72 * time.Hour)
	zoned := []kmsg.Record{{Wall: last.Add(-time.Hour)}, {Wall: last}, {}}
	zoneless := []kmsg.Record{{Wall: last, WallNoZone: true}}
	for _, tc := range []struct {
		name    string
		recs    []kmsg.Record
		capture time.Time
		want    time.Time
	}{
		{"zoned, captured later", zoned, capture, capture},
		{"zoned, capture unknown", zoned, time.Time{}, last},
		{"zoned, capture before the last line", zoned, last.Add(-time.Minute), last},
		{"zoneless", zoneless, capture, last},
		{"no wall clock", []kmsg.Record{{Usec: 5}}, capture, time.Time{}},
	} {
		if got := logNow(tc.recs, tc.capture); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
