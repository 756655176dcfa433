package optfile

import (
	"fmt"
	"strings"
)

// WRProfile maps applications to the work requests each can have outstanding on one CQ
// (--wr-profile):
//
//	{"applications": {"ib_write_bw": 128, "[nvme_rdma]": 4096}}
//
// Keys are command names as /proc/<pid>/comm shows them ("ib_write_bw"), or "[module]" for
// kernel owners ("[nvme_rdma]", the name rdma res show prints).
type WRProfile struct {
	Applications map[string]int64
}

const (
	// maxWR bounds a declared concurrency: more than 2^31 outstanding work requests on one CQ
	// is beyond any device's queue sizes (ibv_query_device max_cqe is an int).
	maxWR = 1 << 31
	// commLen is the longest command name: the kernel keeps TASK_COMM_LEN (16) bytes including
	// the terminating NUL and truncates longer names (include/linux/sched.h; proc(5),
	// /proc/pid/comm), so a longer key could never match a process.
	commLen = 15
)

// DecodeWRProfile decodes a profile document; file names it in errors.
func DecodeWRProfile(b []byte, file string) (*WRProfile, error) {
	root, err := parse(file, b)
	if err != nil {
		return nil, err
	}
	c := checker{file}
	if err := c.object("", root, `a JSON object like {"applications": {"ib_write_bw": 128}}`, "key", "applications"); err != nil {
		return nil, err
	}
	v, ok := root.obj["applications"]
	if !ok {
		return nil, c.fail("", `missing key "applications"`)
	}
	if v.kind != kObject || len(v.keys) == 0 {
		return nil, c.want("applications", `a non-empty object of command name or "[module]" to work requests`, v)
	}
	p := &WRProfile{Applications: map[string]int64{}}
	wantN := fmt.Sprintf("a whole number of outstanding work requests from 1 to %d", int64(maxWR))
	for _, name := range v.keys {
		path := entry("applications", name)
		if err := c.appName(path, name); err != nil {
			return nil, err
		}
		n, err := c.integer(path, v.obj[name], wantN)
		if err != nil {
			return nil, err
		}
		if n < 1 || n > maxWR {
			return nil, c.want(path, wantN, v.obj[name])
		}
		p.Applications[name] = n
	}
	return p, nil
}

func (c checker) appName(path, name string) error {
	if strings.TrimSpace(name) == "" {
		return c.fail(path, `want a command name or "[module]", got an empty one`)
	}
	if strings.HasPrefix(name, "[") || strings.HasSuffix(name, "]") {
		if len(name) < 3 || name[0] != '[' || name[len(name)-1] != ']' {
			return c.fail(path, `want a kernel owner written "[module]" like "[nvme_rdma]", got %s`, quote(name))
		}
		return nil
	}
	if len(name) > commLen {
		return c.fail(path, "want a command name of at most %d bytes as /proc/<pid>/comm shows it "+
			"(the kernel truncates longer ones, so %s could never match), got %d bytes", commLen, quote(name), len(name))
	}
	return nil
}
