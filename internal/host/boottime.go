package host

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// BootTime reads when the host booted: the "btime" line of /proc/stat, seconds since the epoch
// (proc(5); fs/proc/stat.c show_stat). A snapshot holds it since /proc/stat is recorded; older
// snapshots and trees without it give an error, and kernel log times then stay relative to boot.
func (h *Host) BootTime() (time.Time, error) {
	b, err := h.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "btime ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		// Before 2000 or in the far future is not a boot time of a host that runs this tool.
		if err != nil || n < 946684800 || n > 1<<40 {
			return time.Time{}, fmt.Errorf("/proc/stat: btime %q is not a time", strings.TrimSpace(v))
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("/proc/stat: no btime line")
}
