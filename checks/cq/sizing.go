// Package cq holds the completion-queue layer checks: CQ depth against the work requests that
// can complete on it, CQ overruns and EQ errors the kernel already logged, and the completion
// vectors (event queues and their interrupts).
package cq

import (
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strings"
)

// Recommended is the CQ depth to size for concurrency work requests: the next power of two at
// or above twice the concurrency. Twice, because a CQ that is exactly full overruns on the
// next completion while the consumer is descheduled (completions keep arriving while a
// poller drains a batch); a power of two, because that is what hardware allocates anyway (mlx5
// rounds every CQ up to one, so asking for less buys nothing). The documented case:
// concurrency 256 gives 512.
func Recommended(concurrency int64) int64 {
	if concurrency <= 0 {
		return 0
	}
	n := uint64(2 * concurrency)
	if n&(n-1) == 0 {
		return int64(n)
	}
	return int64(1) << bits.Len64(n)
}

// Overruns reports whether a CQ of depth cqe can overrun under concurrency outstanding work
// requests: each one produces a completion, and a CQ holds at most cqe of them (ibv_create_cq(3):
// "at least cqe entries"; the kernel reports the granted depth).
func Overruns(cqe, concurrency int64) bool { return cqe < concurrency }

// Profile maps applications to the work requests each can have outstanding on one CQ. Keys
// are command names as /proc/<pid>/comm and rdma res show print them ("ib_write_bw"), or
// "[module]" for kernel owners ("[nvme_rdma]").
type Profile struct {
	Applications map[string]int64 `json:"applications"`
}

// maxProfileSize bounds the file: a profile names applications, not objects.
const maxProfileSize = 1 << 20

// ParseProfile reads a profile document; errors name what was wrong.
func ParseProfile(b []byte) (*Profile, error) {
	if len(b) > maxProfileSize {
		return nil, fmt.Errorf("profile is %d bytes, more than %d", len(b), maxProfileSize)
	}
	var p Profile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if len(p.Applications) == 0 {
		return nil, fmt.Errorf(`profile: no "applications" entries`)
	}
	names := make([]string, 0, len(p.Applications))
	for k := range p.Applications {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("profile: empty application name")
		}
		if v := p.Applications[k]; v <= 0 || v > 1<<31 {
			return nil, fmt.Errorf("profile: application %q: %d outstanding work requests is not in 1..2^31", k, v)
		}
	}
	return &p, nil
}

// LoadProfile reads and parses a profile file.
func LoadProfile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProfileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
