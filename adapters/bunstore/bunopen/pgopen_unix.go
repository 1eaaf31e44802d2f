//go:build unix

package bunopen

import (
	"errors"
	"syscall"
)

// open reports whether the server has kept the connection open, and
// whether it could tell: a look at the socket that neither waits nor
// takes anything finds nothing to read. It reports false at the end of
// the stream (the server closed it), on an error, and when something
// arrived that nobody asked for (such as PostgreSQL's FATAL "terminating
// connection due to administrator command"), so the connection is not
// used again. A connection that is not a socket cannot be looked at:
// known is false, and the caller asks the server instead.
//
// The look is a peek (MSG_PEEK) made through Control, not a read through
// Read: pgx's background reader, started when a write to the server was
// slow, may still sit in a Read of an idle connection (it stops only when
// that Read returns), and a read here would wait for it, that is for the
// server's next message, or take what it is waiting for. A byte it has
// already taken is not seen here; pgx then reads it as the answer to the
// next statement.
func (c *countingConn) open() (open, known bool) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, true
	}
	open = true
	var b [1]byte
	err = rc.Control(func(fd uintptr) {
		// The socket does not block (Go's sockets never do): nothing to
		// read is EAGAIN; 0 bytes and no error is the end of the stream;
		// any byte is one nobody asked for.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		open = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR)
	})
	return err == nil && open, true
}
