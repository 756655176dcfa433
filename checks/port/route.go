package port

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Route files of the reading process's network namespace (net/ipv4/fib_trie.c
// fib_route_seq_show, net/ipv6/route.c ipv6_route_native_seq_show).
const (
	routeFile  = "/proc/net/route"
	route6File = "/proc/net/ipv6_route"
)

// rtfUp is RTF_UP in include/uapi/linux/route.h: the route is usable. IPv6's "unreachable"
// default route on lo lacks it.
const rtfUp = 0x1

// ParseDefaultRoutes returns the interfaces that carry an IPv4 default route: the lines of
// /proc/net/route whose Destination and Mask are 00000000 and whose Flags have RTF_UP
// ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT").
func ParseDefaultRoutes(b []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	first := true
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if first {
			first = false
			if len(f) < 8 || f[0] != "Iface" || f[1] != "Destination" || f[7] != "Mask" {
				return nil, fmt.Errorf("route table: header %q is not /proc/net/route's", sc.Text())
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("route table: line %q has %d fields, want 11", sc.Text(), len(f))
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("route table: flags %q are not hexadecimal", f[3])
		}
		if f[1] == "00000000" && f[7] == "00000000" && flags&rtfUp != 0 {
			out = appendUnique(out, f[0])
		}
	}
	return out, sc.Err()
}

// ParseDefaultRoutes6 returns the interfaces that carry an IPv6 default route: /proc/net/ipv6_route
// lines "dest prefixlen src srcprefixlen nexthop metric refcnt use flags iface" with an all-zero
// destination, prefix length 00 and RTF_UP, other than lo.
func ParseDefaultRoutes6(b []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 10 || len(f[0]) != 32 {
			return nil, fmt.Errorf("IPv6 route table: line %q is not an ipv6_route line", sc.Text())
		}
		flags, err := strconv.ParseUint(f[8], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("IPv6 route table: flags %q are not hexadecimal", f[8])
		}
		if f[0] == strings.Repeat("0", 32) && f[1] == "00" && flags&rtfUp != 0 && f[9] != "lo" {
			out = appendUnique(out, f[9])
		}
	}
	return out, sc.Err()
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	s = append(s, v)
	sort.Strings(s)
	return s
}
