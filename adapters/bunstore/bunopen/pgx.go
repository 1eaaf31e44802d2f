package bunopen

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// openPostgres opens a PostgreSQL handle through pgx's database/sql driver
// whose connections can also run bunstore's hot reads natively: each is
// pgx's own *stdlib.Conn with a QueryRows method (see bunstore's
// native.go), which queries through pgx's connection directly, sparing
// database/sql's statement, rows and conversion layers. Everything else
// (bun, migrations, the other queries) goes through database/sql as
// before, on the same connections.
func openPostgres(dsn string) (*sql.DB, error) {
	dc, ok := stdlib.GetDefaultDriver().(driver.DriverContext)
	if !ok {
		return nil, fmt.Errorf("pgx's driver has no OpenConnector")
	}
	c, err := dc.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(pgConnector{c}), nil
}

type pgConnector struct{ driver.Connector }

// Connect returns pgx's connection, wrapped to add QueryRows.
func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		return conn, nil // not pgx's: no native reads, nothing else changes
	}
	return &pgConn{Conn: sc}, nil
}

// pgConn is pgx's *stdlib.Conn, every method of which it keeps (so
// database/sql sees the same optional interfaces), plus QueryRows.
type pgConn struct{ *stdlib.Conn }

// QueryRows runs query with args on the pgx connection, as a statement
// prepared once per connection and cached by its text (the handle's
// default mode is the simple protocol, which suits bun's interpolated
// SQL, not these fixed queries), scanning each row into dest and calling
// each.
func (c *pgConn) QueryRows(ctx context.Context, query string, args []any, dest []any, each func() error) error {
	all := make([]any, 0, len(args)+1)
	all = append(all, pgx.QueryExecModeCacheStatement)
	all = append(all, args...)
	rows, err := c.Conn.Conn().Query(ctx, query, all...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if err := each(); err != nil {
			return err
		}
	}
	return rows.Err()
}
