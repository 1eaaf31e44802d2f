//go:build unix

package bunopen

import (
	"errors"
	"syscall"
)

// open reports whether the server has kept the connection open: a read
// that does not wait finds nothing to read. It must be called only while
// the connection is idle, with nobody reading it. It reports false at
// the end of the stream (the server closed it), on an error, and when
// something arrived that nobody asked for (such as PostgreSQL's FATAL
// "terminating connection due to administrator command"): the byte read
// is lost, so the connection must not be used again either way.
func (c *countingConn) open() bool {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return true // not a socket: nothing to check without reading
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := true
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		// Nothing to read is EAGAIN; 0 bytes and no error is the end of
		// the stream; any byte is one nobody asked for.
		_, err := syscall.Read(int(fd), b[:])
		open = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR)
		return true // never wait for the socket to become readable
	})
	return err == nil && open
}
