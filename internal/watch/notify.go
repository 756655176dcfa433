package watch

import (
	"net"
	"os"
	"strconv"
	"time"
)

// SDNotify sends state to systemd's $NOTIFY_SOCKET (sd_notify(3): one datagram on a unix
// socket, a leading '@' naming an abstract socket). It does nothing without the variable.
func SDNotify(state string) error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

// WatchdogInterval is $WATCHDOG_USEC (sd_watchdog_enabled(3)) when it is meant for this
// process, 0 otherwise.
func WatchdogInterval() time.Duration {
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	us, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}
