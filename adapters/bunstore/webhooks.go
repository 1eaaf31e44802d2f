package bunstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/petstorekit/petstore"
	"github.com/petstorekit/petstore/webhook"
)

var _ webhook.OwnClockStore = (*Store)(nil)

// JudgesOnOwnClock reports whether the Store judges webhook leases, due
// times and secret overlaps on the database's clock: true unless
// CallerClock.
func (s *Store) JudgesOnOwnClock() bool { return s.dbNow != "" }

type webhookEndpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints"`

	ID        string `bun:"id,pk"`
	ProjectID string `bun:"project_id,notnull"`
	URL       string `bun:"url,notnull"`
	Secret    string `bun:"secret,notnull"`
	CreatedNS int64  `bun:"created_ns,notnull"`

	// The secret a roll replaced and when it stops being valid: "" and 0
	// when there is none.
	PreviousSecret    string `bun:"previous_secret,notnull"`
	PreviousExpiresNS int64  `bun:"previous_secret_expires_ns,notnull"`
}

func newEndpointRow(e webhook.Endpoint) webhookEndpointRow {
	r := webhookEndpointRow{ID: e.ID, ProjectID: e.ProjectID, URL: e.URL, Secret: e.Secret, CreatedNS: e.CreatedAt.UnixNano()}
	if e.PreviousSecret != "" && !e.PreviousSecretExpiresAt.IsZero() {
		r.PreviousSecret, r.PreviousExpiresNS = e.PreviousSecret, e.PreviousSecretExpiresAt.UnixNano()
	}
	return r
}

func (r webhookEndpointRow) endpoint() webhook.Endpoint {
	e := webhook.Endpoint{ID: r.ID, ProjectID: r.ProjectID, URL: r.URL, Secret: r.Secret, CreatedAt: time.Unix(0, r.CreatedNS).UTC()}
	if r.PreviousSecret != "" && r.PreviousExpiresNS != 0 {
		e.PreviousSecret, e.PreviousSecretExpiresAt = r.PreviousSecret, time.Unix(0, r.PreviousExpiresNS).UTC()
	}
	return e
}

type webhookDeliveryRow struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`

	EventID       string `bun:"event_id,pk"`
	EndpointID    string `bun:"endpoint_id,pk"`
	ProjectID     string `bun:"project_id,notnull"`
	Type          string `bun:"type,notnull"`
	Payload       string `bun:"payload,notnull"`
	CreatedNS     int64  `bun:"created_ns,notnull"`
	State         string `bun:"state,notnull"`
	Attempts      int    `bun:"attempts,notnull"`
	NextAttemptNS int64  `bun:"next_attempt_ns,notnull"`
	LeaseToken    string `bun:"lease_token,notnull"`
	LeaseUntilNS  int64  `bun:"lease_until_ns,notnull"`
	Answers       string `bun:"answers,notnull"`
	// EnqueuedNS is when the event was enqueued on the database's clock
	// (with CallerClock, CreatedNS); 0 in rows an earlier version wrote,
	// before the column was added or during a rolling upgrade after.
	// The first claim of such a row sets it (enqueuedOf).
	EnqueuedNS int64 `bun:"enqueued_ns,notnull"`
}

// enqueuedOf is the enqueue instant in SQL of a delivery whose columns
// are prefixed with p. A row an earlier version wrote has none: if it
// was never attempted, its due time is that instant, which that version
// wrote on the database's clock (one before it, on the enqueuing
// process's, as created_ns); otherwise created_ns, on the enqueuing
// process's clock, is all that is known.
func enqueuedOf(p string) string {
	return "COALESCE(NULLIF(" + p + "enqueued_ns, 0), CASE WHEN " + p + "attempts = 0 THEN " + p + "next_attempt_ns ELSE " + p + "created_ns END)"
}

// enqueuedSQL is a delivery's enqueue instant in SQL, for the alias d.
var enqueuedSQL = enqueuedOf("d.")

func (r webhookDeliveryRow) delivery() (webhook.Delivery, error) {
	d := webhook.Delivery{
		EventID: r.EventID, EndpointID: r.EndpointID, ProjectID: r.ProjectID, Type: r.Type,
		Payload: []byte(r.Payload), CreatedAt: time.Unix(0, r.CreatedNS).UTC(),
		State: webhook.State(r.State), Attempts: r.Attempts, Answers: []webhook.Answer{},
	}
	if r.NextAttemptNS != 0 {
		d.NextAttemptAt = time.Unix(0, r.NextAttemptNS).UTC()
	}
	if err := json.Unmarshal([]byte(r.Answers), &d.Answers); err != nil {
		return webhook.Delivery{}, err
	}
	if d.Answers == nil {
		d.Answers = []webhook.Answer{}
	}
	return d, nil
}

// keptEndpoint reports whether an endpoint could have id and projectID,
// which webhook.Endpoint.CheckStorable allows: no endpoint has others,
// and the databases fail on some (a NUL byte) or, MariaDB, match another
// (bytes that are not UTF-8 dropped), so none is looked up.
func keptEndpoint(projectID, id string) bool {
	return webhook.Endpoint{ID: id, ProjectID: projectID}.CheckStorable() == nil
}

// CreateWebhookEndpoint implements webhook.Store.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e webhook.Endpoint) error {
	if err := e.CheckStorable(); err != nil {
		return err
	}
	row := newEndpointRow(e)
	if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		err = mapErr(ctx, "create webhook endpoint", err)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			return petstore.Errorf(petstore.CodeConflict, "webhook endpoint %s already exists", e.ID)
		}
		return err
	}
	return nil
}

// WebhookEndpoints implements webhook.Store.
func (s *Store) WebhookEndpoints(ctx context.Context, projectID string) ([]webhook.Endpoint, error) {
	if !keptEndpoint(projectID, "wh_") {
		return []webhook.Endpoint{}, ctx.Err()
	}
	var rows []webhookEndpointRow
	q := s.db.NewSelect().Model(&rows)
	if s.dbNow != "" {
		// A previous secret whose overlap has ended on the database's
		// clock is left out, whether or not a purge has erased it yet.
		valid := "previous_secret_expires_ns > " + s.dbNow
		q = q.ColumnExpr("id, project_id, url, secret, created_ns").
			ColumnExpr("CASE WHEN " + valid + " THEN previous_secret ELSE '' END AS previous_secret").
			ColumnExpr("CASE WHEN " + valid + " THEN previous_secret_expires_ns ELSE 0 END AS previous_secret_expires_ns")
	}
	err := q.Where("project_id = ?", projectID).Order("created_ns ASC", "id ASC").Scan(ctx)
	if err != nil {
		return nil, mapErr(ctx, "list webhook endpoints", err)
	}
	out := make([]webhook.Endpoint, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.endpoint())
	}
	return out, nil
}

// DeleteWebhookEndpoint implements webhook.Store. The endpoint goes
// first: from then on no claim returns its deliveries, whatever a
// concurrent enqueue adds.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, projectID, id string) error {
	if !keptEndpoint(projectID, id) {
		return webhook.EndpointNotFound(id)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*webhookEndpointRow)(nil)).Where("id = ?", id).Where("project_id = ?", projectID).Exec(ctx)
		if err != nil {
			return mapErr(ctx, "delete webhook endpoint", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return webhook.EndpointNotFound(id)
		}
		if _, err := tx.NewDelete().Model((*webhookDeliveryRow)(nil)).Where("endpoint_id = ?", id).Exec(ctx); err != nil {
			return mapErr(ctx, "delete webhook deliveries", err)
		}
		return nil
	})
}

// RotateWebhookSecret implements webhook.Store with one UPDATE, which
// every reader sees whole, and reads the endpoint back in the same
// transaction. MySQL and MariaDB assign a single-table UPDATE's columns
// left to right, each seeing those assigned before it, where SQLite and
// PostgreSQL read the row as it was: previous_secret is assigned before
// secret, so all three copy the secret being replaced. The previous
// secret's end is written on the database's clock, previousExpiresAt -
// now after the UPDATE (unless CallerClock), so that every process
// judges it alike.
func (s *Store) RotateWebhookSecret(ctx context.Context, projectID, id, secret string, now, previousExpiresAt time.Time) (webhook.Endpoint, error) {
	if err := webhook.CheckSecretStorable(secret); err != nil {
		return webhook.Endpoint{}, err
	}
	if !keptEndpoint(projectID, id) {
		return webhook.Endpoint{}, webhook.EndpointNotFound(id)
	}
	var row webhookEndpointRow
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*webhookEndpointRow)(nil))
		switch {
		case previousExpiresAt.IsZero():
			q = q.Set("previous_secret = ''").Set("previous_secret_expires_ns = 0")
		case s.dbNow != "":
			q = q.Set("previous_secret = secret").Set("previous_secret_expires_ns = "+s.dbNow+" + ?", int64(previousExpiresAt.Sub(now)))
		default:
			q = q.Set("previous_secret = secret").Set("previous_secret_expires_ns = ?", previousExpiresAt.UnixNano())
		}
		res, err := q.Set("secret = ?", secret).Where("id = ?", id).Where("project_id = ?", projectID).Exec(ctx)
		if err != nil {
			return mapErr(ctx, "rotate webhook secret", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return webhook.EndpointNotFound(id)
		}
		if err := tx.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
			return mapErr(ctx, "read webhook endpoint", err)
		}
		return nil
	})
	if err != nil {
		return webhook.Endpoint{}, err
	}
	return row.endpoint(), nil
}

// EnqueueWebhookEvent implements webhook.Store in one INSERT … SELECT, so
// the deliveries of an event are all stored or none is. On the
// database's clock, they are due at once, and their age counts from this
// INSERT: ev.CreatedAt is on the enqueuing process's clock, which may be
// ahead of the others' or behind.
func (s *Store) EnqueueWebhookEvent(ctx context.Context, ev webhook.Event) (int, error) {
	if err := ev.CheckStorable(); err != nil {
		return 0, err
	}
	at := ev.CreatedAt.UnixNano()
	now, nowArgs := "?", []any{at, at}
	if s.dbNow != "" {
		now, nowArgs = s.dbNow, nil
	}
	args := append([]any{ev.ID, ev.Type, string(ev.Payload), at, string(webhook.StatePending)}, nowArgs...)
	res, err := s.db.ExecContext(ctx, `INSERT INTO webhook_deliveries
		(event_id, endpoint_id, project_id, type, payload, created_ns, state, attempts, next_attempt_ns, enqueued_ns, lease_token, lease_until_ns, answers)
		SELECT ?, id, project_id, ?, ?, ?, ?, 0, `+now+`, `+now+`, '', 0, '[]' FROM webhook_endpoints WHERE project_id = ?`,
		append(args, ev.ProjectID)...)
	if err != nil {
		err = mapErr(ctx, "enqueue webhook event", err)
		if petstore.ErrorCode(err) == petstore.CodeConflict {
			return 0, petstore.Errorf(petstore.CodeConflict, "webhook event %s already enqueued", ev.ID)
		}
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(ctx, "enqueue webhook event", err)
	}
	return int(n), nil
}

// dbNowSQL is the SQL expression of the database's clock in Unix
// nanoseconds on dialect d, fixed for the statement that reads it. The
// three are in UTC whatever the session's time zone, so no daylight
// saving change moves them. SQLite's is the clock of the host running
// the statement: processes sharing a SQLite file share a host, and so
// its clock.
func dbNowSQL(d dialect.Name) string {
	switch d {
	case dialect.PG:
		return "(CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) * 1000)"
	case dialect.MySQL:
		return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) * 1000)"
	default:
		return "(CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) * 1000)"
	}
}

// ClaimWebhookDeliveries implements webhook.Store without row locks, the
// same way on the three databases: it reads candidates (each endpoint's
// perEndpoint earliest due, numbered by a window function, which
// SQLite 3.25, PostgreSQL and MariaDB 10.2 have), then leases them with
// one UPDATE whose WHERE repeats the conditions, so of two processes
// racing for a delivery only one UPDATE changes the row, and reads back
// those now leased to token. Three round trips, whatever limit is: the
// lease runs while the claim does.
//
// A lease's end and a delivery's due time are written and judged on the
// database's clock (dbNow): a lease lasts leaseUntil - now from the
// UPDATE, so that a process whose clock is minutes ahead of the
// holder's can neither take over an attempt in flight nor make a retry
// early; a delivery's Age is the database's clock at the last SELECT
// less enqueued_ns, so that RetryFor runs on it too, and an endpoint's
// previous secret is returned only while valid on it, its end then on
// the caller's clock (webhook.Store). With CallerClock, all are on the
// callers' times.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, token string, now, leaseUntil time.Time, limit, perEndpoint int) ([]webhook.Due, error) {
	out := []webhook.Due{}
	if limit <= 0 || perEndpoint <= 0 {
		return out, ctx.Err()
	}
	// claimable is the condition of a delivery due and not leased, and
	// newEnd the end of the lease this claim takes, with their arguments.
	// age is a delivery's age at the read that returns it.
	// left is how long an endpoint's previous secret is still valid at
	// that read.
	claimable, newEnd, age, left := "next_attempt_ns <= ? AND lease_until_ns <= ?", "?", "? - "+enqueuedSQL, "e.previous_secret_expires_ns - ?"
	claimArgs, endArgs, nowArgs := []any{now.UnixNano(), now.UnixNano()}, []any{leaseUntil.UnixNano()}, []any{now.UnixNano()}
	if s.dbNow != "" {
		claimable, newEnd, age, left = "next_attempt_ns <= "+s.dbNow+" AND lease_until_ns <= "+s.dbNow, s.dbNow+" + ?", s.dbNow+" - "+enqueuedSQL, "e.previous_secret_expires_ns - "+s.dbNow
		claimArgs, endArgs, nowArgs = nil, []any{int64(leaseUntil.Sub(now))}, nil
	}
	ranked := s.db.NewSelect().TableExpr("webhook_deliveries").
		Column("event_id", "endpoint_id", "next_attempt_ns").
		ColumnExpr("ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_ns ASC, event_id ASC) AS nth").
		Where("state = ?", string(webhook.StatePending)).
		Where(claimable, claimArgs...).
		Where("endpoint_id IN (SELECT id FROM webhook_endpoints)")
	var cands []webhookDeliveryRow
	err := s.db.NewSelect().TableExpr("(?) AS c", ranked).
		ColumnExpr("c.event_id, c.endpoint_id").
		Where("c.nth <= ?", perEndpoint).
		OrderExpr("c.next_attempt_ns ASC, c.event_id ASC, c.endpoint_id ASC").
		Limit(int64(limit)).
		Scan(ctx, &cands)
	if err != nil {
		return nil, mapErr(ctx, "claim webhook deliveries", err)
	}
	if len(cands) == 0 {
		return out, nil
	}
	// These candidates, and not earlier claims with the same token:
	// event_id and endpoint_id are only the deliveries' columns.
	pairs, args := make([]string, len(cands)), make([]any, 0, 2*len(cands))
	for i, c := range cands {
		pairs[i] = "(event_id = ? AND endpoint_id = ?)"
		args = append(args, c.EventID, c.EndpointID)
	}
	these := "(" + strings.Join(pairs, " OR ") + ")"
	_, err = s.db.NewUpdate().Model((*webhookDeliveryRow)(nil)).
		Set("lease_token = ?", token).Set("lease_until_ns = "+newEnd, endArgs...).
		// An earlier version's row keeps the instant its first claim
		// finds, so that every later claim counts from it too.
		Set("enqueued_ns = "+enqueuedOf("")).
		Where("state = ?", string(webhook.StatePending)).
		Where(claimable, claimArgs...).
		Where(these, args...).
		Exec(ctx)
	if err != nil {
		return nil, mapErr(ctx, "claim webhook deliveries", err)
	}
	var rows []struct {
		webhookDeliveryRow
		URL            string `bun:"url"`
		Secret         string `bun:"secret"`
		EPCreated      int64  `bun:"ep_created_ns"`
		PreviousSecret string `bun:"previous_secret"`
		PreviousNS     int64  `bun:"previous_secret_expires_ns"`
		AgeNS          int64  `bun:"age_ns"`
		PreviousLeftNS int64  `bun:"previous_left_ns"`
	}
	// The columns by name, not d.*: bun rejects a column its struct
	// lacks, so a column a later migration adds would fail the claims of
	// replicas not upgraded yet, as enqueued_ns fails earlier versions'.
	err = s.db.NewSelect().TableExpr("webhook_deliveries AS d").
		ColumnExpr("d.event_id, d.endpoint_id, d.project_id, d.type, d.payload, d.created_ns, d.state, d.attempts, d.next_attempt_ns, d.lease_token, d.lease_until_ns, d.answers").
		ColumnExpr("e.url, e.secret, e.created_ns AS ep_created_ns, e.previous_secret, e.previous_secret_expires_ns").
		ColumnExpr(age+" AS age_ns", nowArgs...).
		ColumnExpr(left+" AS previous_left_ns", nowArgs...).
		Join("JOIN webhook_endpoints AS e ON e.id = d.endpoint_id").
		Where("d.lease_token = ?", token).
		Where(these, args...).
		Order("d.next_attempt_ns ASC", "d.event_id ASC", "d.endpoint_id ASC").
		Scan(ctx, &rows)
	if err != nil {
		return nil, mapErr(ctx, "read claimed webhook deliveries", err)
	}
	for _, r := range rows {
		d, err := r.delivery()
		if err != nil {
			return nil, mapErr(ctx, "read claimed webhook deliveries", err)
		}
		ep := webhookEndpointRow{ID: r.EndpointID, ProjectID: r.ProjectID, URL: r.URL, Secret: r.Secret, CreatedNS: r.EPCreated}
		if r.PreviousSecret != "" && r.PreviousNS != 0 && r.PreviousLeftNS > 0 {
			// Still valid: until as long after now, on the caller's clock.
			ep.PreviousSecret, ep.PreviousExpiresNS = r.PreviousSecret, now.Add(time.Duration(r.PreviousLeftNS)).UnixNano()
		}
		out = append(out, webhook.Due{Delivery: d, Endpoint: ep.endpoint(), Age: time.Duration(r.AgeNS)})
	}
	return out, nil
}

// FinishWebhookAttempt implements webhook.Store. A retry is due on the
// database's clock as long after this UPDATE as d.NextAttemptAt is after
// now (unless CallerClock).
func (s *Store) FinishWebhookAttempt(ctx context.Context, token string, now time.Time, d webhook.Delivery) error {
	answers := d.Answers
	if answers == nil {
		answers = []webhook.Answer{}
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return err
	}
	next, nextArgs := "?", []any{int64(0)}
	switch {
	case d.NextAttemptAt.IsZero():
	case s.dbNow != "":
		next, nextArgs = s.dbNow+" + ?", []any{int64(d.NextAttemptAt.Sub(now))}
	default:
		nextArgs = []any{d.NextAttemptAt.UnixNano()}
	}
	res, err := s.db.NewUpdate().Model((*webhookDeliveryRow)(nil)).
		Set("state = ?", string(d.State)).Set("attempts = ?", d.Attempts).Set("next_attempt_ns = "+next, nextArgs...).
		Set("answers = ?", string(b)).Set("lease_token = ''").Set("lease_until_ns = 0").
		Where("event_id = ?", d.EventID).Where("endpoint_id = ?", d.EndpointID).
		Where("lease_token = ?", token).Where("lease_token <> ''").
		Exec(ctx)
	if err != nil {
		return mapErr(ctx, "finish webhook attempt", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	// Not leased to token, or gone: the worker tells the two apart in its
	// log (another claim makes the attempt again; nobody does).
	n, err := s.db.NewSelect().Model((*webhookDeliveryRow)(nil)).Where("event_id = ?", d.EventID).Where("endpoint_id = ?", d.EndpointID).Count(ctx)
	switch {
	case err != nil:
		return mapErr(ctx, "finish webhook attempt", err)
	case n == 0:
		return petstore.Errorf(petstore.CodeNotFound, "the delivery of %s to %s is gone", d.EventID, d.EndpointID)
	}
	return petstore.Errorf(petstore.CodeConflict, "the delivery of %s to %s is not leased to this claim", d.EventID, d.EndpointID)
}

// WebhookDeliveries implements webhook.Store.
func (s *Store) WebhookDeliveries(ctx context.Context, projectID, endpointID string, limit int) ([]webhook.Delivery, error) {
	if !keptEndpoint(projectID, endpointID) {
		return nil, webhook.EndpointNotFound(endpointID)
	}
	n, err := s.db.NewSelect().Model((*webhookEndpointRow)(nil)).Where("id = ?", endpointID).Where("project_id = ?", projectID).Count(ctx)
	if err != nil {
		return nil, mapErr(ctx, "read webhook endpoint", err)
	}
	if n == 0 {
		return nil, webhook.EndpointNotFound(endpointID)
	}
	out := []webhook.Delivery{}
	if limit <= 0 {
		return out, nil
	}
	var rows []webhookDeliveryRow
	err = s.db.NewSelect().Model(&rows).Where("endpoint_id = ?", endpointID).
		Order("created_ns DESC", "event_id DESC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, mapErr(ctx, "list webhook deliveries", err)
	}
	for _, r := range rows {
		d, err := r.delivery()
		if err != nil {
			return nil, mapErr(ctx, "list webhook deliveries", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// PurgeWebhookDeliveries implements webhook.Store. Previous secrets are
// erased once their end has passed on the database's clock, and finished
// deliveries deleted once enqueued more than now - before ago on it (with
// CallerClock, at now, and created before before): a purging process
// whose clock is days ahead must not delete days early.
func (s *Store) PurgeWebhookDeliveries(ctx context.Context, now, before time.Time) (int, error) {
	end, endArgs := "?", []any{now.UnixNano()}
	old, oldArgs := "created_ns < ?", []any{before.UnixNano()}
	if s.dbNow != "" {
		end, endArgs = s.dbNow, nil
		old, oldArgs = enqueuedOf("")+" < "+s.dbNow+" - ?", []any{int64(now.Sub(before))}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE webhook_endpoints SET previous_secret = '', previous_secret_expires_ns = 0
		WHERE previous_secret_expires_ns <> 0 AND previous_secret_expires_ns <= `+end, endArgs...); err != nil {
		return 0, mapErr(ctx, "erase ended webhook secrets", err)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM webhook_deliveries
		WHERE (state <> ? AND `+old+`) OR endpoint_id NOT IN (SELECT id FROM webhook_endpoints)`,
		append([]any{string(webhook.StatePending)}, oldArgs...)...)
	if err != nil {
		return 0, mapErr(ctx, "purge webhook deliveries", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr(ctx, "purge webhook deliveries", err)
	}
	return int(n), nil
}
