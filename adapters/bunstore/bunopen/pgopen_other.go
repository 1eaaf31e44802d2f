//go:build !unix

package bunopen

// open reports true: without a read that does not wait, the connection
// cannot be checked without a round trip, which pgx's own ping (for a
// connection idle more than a second) makes.
func (c *countingConn) open() bool { return true }
