package netlinkraw

import (
	"fmt"
	"sync"
)

// Lazy opens its socket on the first exchange, so that a run that asks a protocol nothing opens
// no socket of it. A socket that cannot be opened fails every exchange with the reason.
type Lazy struct {
	what string
	dial func() (*Conn, error)

	once sync.Once
	conn *Conn
	err  error
}

// NewLazy returns a Lazy that opens its socket with dial; what names it in errors.
func NewLazy(what string, dial func() (*Conn, error)) *Lazy { return &Lazy{what: what, dial: dial} }

// Exchange opens the socket if needed and exchanges req.
func (l *Lazy) Exchange(req Request) ([]byte, error) {
	l.once.Do(func() { l.conn, l.err = l.dial() })
	if l.err != nil {
		return nil, fmt.Errorf("%s socket: %w", l.what, l.err)
	}
	return l.conn.Exchange(req)
}

// Close closes the socket if it was opened.
func (l *Lazy) Close() error {
	l.once.Do(func() { l.err = fmt.Errorf("closed before first use") })
	if l.conn != nil {
		return l.conn.Close()
	}
	return nil
}
