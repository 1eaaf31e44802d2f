package bunstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/uptrace/bun/dialect"
)

// The hot queries (a page of pets, one pet, a new pet, the key behind a
// token, and the Idempotency-Key records of a POST) skip bun: each is one
// *sql.Stmt, prepared on first use and reused after, and rows are scanned
// by hand. Building the query with bun, having the database parse and plan
// it again, and scanning by reflection cost more than the query itself on
// SQLite (issue 11). Everything else goes through bun.
//
// database/sql prepares a statement again on each pooled connection the
// first time it runs there. On PostgreSQL, pgx prepares it on the server
// and executes it with the extended protocol, whatever
// default_query_exec_mode says: that mode only governs the SQL that bun
// sends. On MySQL, go-sql-driver prepares it on the server too.

// stmt is one statement, prepared on its first use. A failed prepare (the
// database is down, or the schema is not migrated yet) is not remembered:
// the next use tries again. One use prepares at a time; the others wait
// for it no longer than their own context, which a mutex would ignore: on
// a database that does not answer, a request with a short deadline would
// wait for the preparing one's, however long.
type stmt struct {
	query string
	turn  chan struct{} // holds a token while a use prepares; made by newQueries
	p     atomic.Pointer[sql.Stmt]
}

func (s *stmt) get(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	if p := s.p.Load(); p != nil {
		return p, nil
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.turn }()
	if p := s.p.Load(); p != nil {
		return p, nil
	}
	p, err := db.PrepareContext(ctx, s.query)
	if err != nil {
		return nil, err
	}
	s.p.Store(p)
	return p, nil
}

// queries are the store's prepared statements, written with ? and
// renumbered as $1, $2... for PostgreSQL.
type queries struct {
	insertPet      stmt // returns the id on PostgreSQL, which has no LastInsertId
	getPet         stmt
	getPets        stmt // PostgreSQL only: the pets of an array of ids (petbatch.go)
	listPets       stmt
	listPetsStatus stmt
	keyByHash      stmt

	idemClaim    stmt
	idemGet      stmt
	idemComplete stmt
}

const petColumns = "id, name, category_id, status"

const idemColumns = "scope, idem_key, request_hash, created_at_ns, completed, status, content_type, location, body"

func newQueries(d dialect.Name) *queries {
	insertPet := "INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)"
	if d == dialect.PG {
		insertPet += " RETURNING id"
	}
	qs := &queries{
		insertPet:      stmt{query: insertPet},
		getPet:         stmt{query: "SELECT " + petColumns + " FROM pets WHERE id = ?"},
		getPets:        stmt{query: "SELECT " + petColumns + " FROM pets WHERE id = ANY(?)"},
		listPets:       stmt{query: "SELECT " + petColumns + " FROM pets WHERE id > ? ORDER BY id ASC LIMIT ?"},
		listPetsStatus: stmt{query: "SELECT " + petColumns + " FROM pets WHERE status = ? AND id > ? ORDER BY id ASC LIMIT ?"},
		keyByHash: stmt{query: "SELECT id, hash, project_id, plan, per_minute, per_day, created_at_ns" +
			" FROM api_keys WHERE hash = ?"},

		// The columns left out take their defaults: no response yet, which
		// the same transaction stores (CreateOnce).
		idemClaim: stmt{query: "INSERT INTO idempotency_keys (scope, idem_key, request_hash, created_at_ns) VALUES (?, ?, ?, ?)"},
		idemGet:   stmt{query: "SELECT " + idemColumns + " FROM idempotency_keys WHERE scope = ? AND idem_key = ?"},
		idemComplete: stmt{query: "UPDATE idempotency_keys SET completed = TRUE, status = ?, content_type = ?, location = ?, body = ?" +
			" WHERE scope = ? AND idem_key = ?"},
	}
	for _, s := range []*stmt{&qs.insertPet, &qs.getPet, &qs.getPets, &qs.listPets, &qs.listPetsStatus, &qs.keyByHash,
		&qs.idemClaim, &qs.idemGet, &qs.idemComplete} {
		s.turn = make(chan struct{}, 1)
		if d == dialect.PG {
			s.query = dollarPlaceholders(s.query)
		}
	}
	return qs
}

// dollarPlaceholders numbers the ? placeholders of q as PostgreSQL's $1,
// $2... None of the queries above has a ? inside a literal.
func dollarPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	for {
		i := strings.IndexByte(q, '?')
		if i < 0 {
			b.WriteString(q)
			return b.String()
		}
		n++
		b.WriteString(q[:i])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
		q = q[i+1:]
	}
}

// nullString is s, or NULL when s is empty: a pet without a status.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
