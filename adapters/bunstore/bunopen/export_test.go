package bunopen

import (
	"database/sql"
	"net"
)

// OpenPostgresOver opens a PostgreSQL DSN as Open does, except that each
// connection pgx dials is first handed to wrap: a test can put a
// net.Conn of its own between pgx and the socket.
func OpenPostgresOver(dsn string, wrap func(net.Conn) net.Conn) (*sql.DB, error) {
	t, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	return openPostgres(t.DriverDSN, wrap)
}
