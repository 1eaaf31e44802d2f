package bunopen

import (
	"context"
	"database/sql"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenPostgresOver opens a PostgreSQL DSN as Open does (pgx's
// connections, each wrapped as openPostgres wraps it), except that each
// connection pgx dials is first handed to wrap: a test can put a
// net.Conn of its own between pgx and the socket.
func OpenPostgresOver(dsn string, wrap func(net.Conn) net.Conn) (*sql.DB, error) {
	t, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(t.DriverDSN)
	if err != nil {
		return nil, err
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: wrap(c)}, nil
	}
	return sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg)}), nil
}
