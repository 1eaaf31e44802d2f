//go:build !unix

package bunopen

// open reports that it cannot tell (known false): outside Unix, the
// syscall package offers no read that neither waits nor takes what it
// finds (its Recvfrom is not implemented on Windows), so the caller asks
// the server instead, with a round trip.
func (c *countingConn) open() (open, known bool) { return false, false }
