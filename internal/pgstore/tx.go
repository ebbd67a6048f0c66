package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reserve/reserve/internal/engine"
)

// pageSize is how many rows a ForEach scan reads per query. Scans read page
// by page and call their function between queries, so the function may use
// the transaction too.
const pageSize = 500

// table describes how one engine record type maps to the columns of one
// table. The first keys columns are its primary key.
type table[T any] struct {
	name    string
	columns []string
	keys    int
	// values returns the column values of a record, in column order.
	values func(T) []any
	// dests returns scan destinations for the columns of a record.
	dests func(*T) []any
	// filter, if set, restricts the rows that scans visit (a WHERE
	// condition).
	filter string
	// stamped is set for the tables whose every write states the schema
	// version its writer knows, in the column writer_schema, which a
	// trigger empties (migration 0016): a write that does not, by a
	// daemon of an earlier version, is refused where it would corrupt
	// what it does not know.
	stamped bool
}

var workshops = table[engine.Workshop]{
	name: "workshops",
	columns: []string{"id", "title", "capacity", "reserved_places", "max_quantity", "version", "holding", "hidden",
		"description", "location", "time_zone", "starts_at", "ends_at", "registration_opens_at", "registration_closes_at", "max_per_person",
		"waiting", "offer_ttl_seconds"},
	keys: 1,
	values: func(w engine.Workshop) []any {
		s := w.Schedule
		return []any{w.ID, w.Title, w.Capacity, w.Reserved, w.MaxQuantity, w.Version, w.Holding, w.Hidden,
			s.Description, s.Location, s.TimeZone, nullTime(s.StartsAt), nullTime(s.EndsAt),
			nullTime(s.RegistrationOpensAt), nullTime(s.RegistrationClosesAt), s.MaxPerPerson,
			w.Waiting, w.OfferTTLSeconds}
	},
	dests: func(w *engine.Workshop) []any {
		s := &w.Schedule
		return []any{&w.ID, &w.Title, &w.Capacity, &w.Reserved, &w.MaxQuantity, &w.Version, &w.Holding, &w.Hidden,
			&s.Description, &s.Location, &s.TimeZone, zeroIfNull{&s.StartsAt}, zeroIfNull{&s.EndsAt},
			zeroIfNull{&s.RegistrationOpensAt}, zeroIfNull{&s.RegistrationClosesAt}, &s.MaxPerPerson,
			&w.Waiting, &w.OfferTTLSeconds}
	},
	stamped: true,
}

var reservations = table[engine.Reservation]{
	name:    "reservations",
	columns: []string{"id", "actor", "operation_key", "workshop", "quantity", "created_at", "cancelled_at", "cancelled_by", "cancel_operation"},
	keys:    1,
	values: func(r engine.Reservation) []any {
		return []any{r.ID, r.Actor, string(r.OperationKey), r.Workshop, r.Quantity, r.CreatedAt,
			nullTime(r.CancelledAt), nullString(r.CancelledBy), nullString(string(r.CancelOperation))}
	},
	dests: func(r *engine.Reservation) []any {
		return []any{&r.ID, &r.Actor, &r.OperationKey, &r.Workshop, &r.Quantity, &r.CreatedAt,
			zeroIfNull{&r.CancelledAt}, emptyIfNull{&r.CancelledBy}, emptyKeyIfNull{&r.CancelOperation}}
	},
}

var tombstones = table[engine.Tombstone]{
	name: "tombstones",
	columns: []string{"actor", "operation_key", "fingerprint_version", "fingerprint", "status",
		"reservation_id", "workshop", "quantity", "created_at", "purged_at", "hold_id", "hold_expires_at", "max_per_person", "already", "delivery_id",
		"entry_id", "position"},
	keys: 2,
	values: func(t engine.Tombstone) []any {
		var limit, already *int
		if l := t.Answer.Limit; l != (engine.Limit{}) {
			limit, already = &l.MaxPerPerson, &l.Already
		}
		return []any{t.Actor, string(t.OperationKey), t.FingerprintVersion, t.Fingerprint, t.Answer.Status,
			nullString(t.Answer.ReservationID), t.Answer.Workshop, t.Answer.Quantity, t.CreatedAt, t.PurgedAt,
			nullString(t.Answer.HoldID), nullTime(t.Answer.ExpiresAt), limit, already, nullString(t.Answer.DeliveryID),
			nullString(t.Answer.EntryID), nullInt(t.Answer.Position)}
	},
	dests: func(t *engine.Tombstone) []any {
		return []any{&t.Actor, &t.OperationKey, &t.FingerprintVersion, &t.Fingerprint, kindOf{&t.Answer.Kind, &t.FingerprintVersion, &t.Answer.Status},
			emptyIfNull{&t.Answer.ReservationID}, &t.Answer.Workshop, &t.Answer.Quantity, &t.CreatedAt, &t.PurgedAt,
			emptyIfNull{&t.Answer.HoldID}, zeroIfNull{&t.Answer.ExpiresAt}, zeroIntIfNull{&t.Answer.Limit.MaxPerPerson}, zeroIntIfNull{&t.Answer.Limit.Already},
			emptyIfNull{&t.Answer.DeliveryID}, emptyIfNull{&t.Answer.EntryID}, zeroIntIfNull{&t.Answer.Position}}
	},
}

// zeroIntIfNull scans a nullable integer column into an int, NULL as 0.
type zeroIntIfNull struct{ n *int }

// ScanInt64 implements pgtype.Int64Scanner.
func (z zeroIntIfNull) ScanInt64(v pgtype.Int8) error {
	*z.n = int(v.Int64)
	return nil
}

// events keeps the outbox. An event keeps its payload as it was built
// when it was added, and the members the engine routes it by (owner,
// workshop and quantity, NULL in the events stored before migration
// 0014). Its routed column is left out: AddEvent inserts it unrouted (the
// column's default) and only MarkEventRouted changes it.
var events = table[engine.Event]{
	name: "events",
	columns: []string{"id", "type", "reservation_id", "hold_id", "actor", "operation_key", "owner", "workshop", "quantity",
		"payload", "created_at", "delivered_at", "hold_expires_at"},
	keys: 1,
	values: func(e engine.Event) []any {
		payload, _ := e.Payload() // The engine adds no event whose payload it cannot encode.
		return []any{e.ID, e.Type, e.ReservationID, nullString(e.HoldID), e.Actor, string(e.OperationKey),
			nullString(e.Owner), nullString(e.Workshop), nullInt(e.Quantity), payload, e.CreatedAt, deliveredAt(e), nullTime(e.HoldExpiresAt)}
	},
	dests: func(e *engine.Event) []any {
		return []any{&e.ID, &e.Type, &e.ReservationID, emptyIfNull{&e.HoldID}, &e.Actor, &e.OperationKey,
			emptyIfNull{&e.Owner}, emptyIfNull{&e.Workshop}, zeroIntIfNull{&e.Quantity}, storedPayload{e}, &e.CreatedAt, zeroIfNull{&e.DeliveredAt},
			zeroIfNull{&e.HoldExpiresAt}}
	},
}

// neverDelivered is the delivered_at of an event that the simple channels
// never deliver (one for which Event.ForSimpleChannels is false, a hold
// event): not NULL, so that it stays out of the partial index
// events_pending that ForEachPendingEvent reads, and before every time a
// delivery can have. It reads as the zero time, as a pending event's NULL
// does.
var neverDelivered = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}

// deliveredAt is the delivered_at of e: when it was delivered, NULL while
// the simple channels have it pending, or neverDelivered.
func deliveredAt(e engine.Event) any {
	if e.DeliveredAt.IsZero() && !e.ForSimpleChannels() {
		return neverDelivered
	}
	return nullTime(e.DeliveredAt)
}

// nullInt is 0 as NULL, for nullable integer columns.
func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// nullTime is a zero time as NULL, for nullable timestamptz columns.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// nullString is "" as NULL, for nullable text columns.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// emptyKeyIfNull scans a nullable text column into an operation key, NULL
// as "".
type emptyKeyIfNull struct{ k *engine.OperationKey }

// ScanText implements pgtype.TextScanner.
func (e emptyKeyIfNull) ScanText(v pgtype.Text) error {
	*e.k = engine.OperationKey(v.String)
	return nil
}

var receipts = table[engine.Receipt]{
	name: "receipts",
	columns: []string{"actor", "operation_key", "fingerprint_version", "fingerprint", "workshop", "quantity",
		"status", "hold_id", "hold_expires_at", "hold_ttl_seconds", "delivery_id", "body", "reservation_id", "created_at", "entry_id", "position"},
	keys: 2,
	values: func(r engine.Receipt) []any {
		return []any{r.Actor, string(r.OperationKey), r.FingerprintVersion, r.Fingerprint, r.Request.Workshop, r.Request.Quantity,
			r.Answer.Status, nullString(r.HoldID), nullTime(r.HoldExpiresAt), r.HoldTTLSeconds, nullString(r.DeliveryID), r.Answer.JSON(), nullString(r.ReservationID), r.CreatedAt,
			nullString(r.EntryID), nullInt(r.Position)}
	},
	dests: func(r *engine.Receipt) []any {
		return []any{&r.Actor, &r.OperationKey, &r.FingerprintVersion, &r.Fingerprint, &r.Request.Workshop, &r.Request.Quantity,
			&r.Answer.Status, emptyIfNull{&r.HoldID}, zeroIfNull{&r.HoldExpiresAt}, &r.HoldTTLSeconds, emptyIfNull{&r.DeliveryID}, storedAnswer{r}, emptyIfNull{&r.ReservationID}, &r.CreatedAt,
			emptyIfNull{&r.EntryID}, zeroIntIfNull{&r.Position}}
	},
}

var holds = table[engine.Hold]{
	name: "holds",
	columns: []string{"id", "actor", "operation_key", "workshop", "quantity", "state", "created_at", "expires_at",
		"reservation_id", "settled_at", "settle_operation", "entry_id"},
	keys: 1,
	values: func(h engine.Hold) []any {
		return []any{h.ID, h.Actor, string(h.OperationKey), h.Workshop, h.Quantity, string(h.State), h.CreatedAt, h.ExpiresAt,
			nullString(h.ReservationID), nullTime(h.SettledAt), nullString(string(h.SettleOperation)), nullString(h.WaitEntry)}
	},
	dests: func(h *engine.Hold) []any {
		return []any{&h.ID, &h.Actor, &h.OperationKey, &h.Workshop, &h.Quantity, &h.State, &h.CreatedAt, &h.ExpiresAt,
			emptyIfNull{&h.ReservationID}, zeroIfNull{&h.SettledAt}, emptyKeyIfNull{&h.SettleOperation}, emptyIfNull{&h.WaitEntry}}
	},
	stamped: true,
}

var tokens = table[engine.TokenRecord]{
	name:    "tokens",
	columns: []string{"hash", "kind", "actor", "admin", "created_at", "expires_at", "last_used_at"},
	keys:    1,
	values: func(r engine.TokenRecord) []any {
		return []any{r.Hash, r.Kind, r.Actor, r.Admin, r.CreatedAt, nullTime(r.ExpiresAt), nullTime(r.LastUsedAt)}
	},
	dests: func(r *engine.TokenRecord) []any {
		return []any{&r.Hash, &r.Kind, &r.Actor, &r.Admin, &r.CreatedAt, zeroIfNull{&r.ExpiresAt}, zeroIfNull{&r.LastUsedAt}}
	},
}

// bindings keeps each binding of a subject to an actor, keyed by the
// subject (migration 0009).
var bindings = table[engine.Binding]{
	name:    "actor_bindings",
	columns: []string{"subject_kind", "subject_id", "actor", "created_at"},
	keys:    2,
	values: func(b engine.Binding) []any {
		return []any{b.Kind, b.Subject, b.Actor, b.CreatedAt}
	},
	dests: func(b *engine.Binding) []any {
		return []any{&b.Kind, &b.Subject, &b.Actor, &b.CreatedAt}
	},
}

// bindingsByActor is the same table keyed by its unique actor column, for
// the lookup by actor; it is only read. Its rows' ids (an actor name) never
// equal those of bindings (kind 0x00 subject), because an actor name holds
// no 0x00, so a group may keep both in memory.
var bindingsByActor = table[engine.Binding]{
	name:    bindings.name,
	columns: []string{"actor", "subject_kind", "subject_id", "created_at"},
	keys:    1,
	values: func(b engine.Binding) []any {
		return []any{b.Actor, b.Kind, b.Subject, b.CreatedAt}
	},
	dests: func(b *engine.Binding) []any {
		return []any{&b.Actor, &b.Kind, &b.Subject, &b.CreatedAt}
	},
}

// profiles keeps each actor's profile, keyed by its actor (migration
// 0013; the verified address since 0014).
var profiles = table[engine.Profile]{
	name:    "profiles",
	columns: []string{"actor", "display_name", "language", "email"},
	keys:    1,
	values: func(p engine.Profile) []any {
		return []any{p.Actor, p.DisplayName, p.Language, p.Email}
	},
	dests: func(p *engine.Profile) []any {
		return []any{&p.Actor, &p.DisplayName, &p.Language, &p.Email}
	},
}

// apiTokens is the tokens table seen through its index of API tokens by
// id (the generated column of migration 0010); it is only scanned.
var apiTokens = table[engine.TokenRecord]{
	name:    "tokens",
	columns: append([]string{"id"}, tokens.columns...),
	keys:    1,
	values: func(r engine.TokenRecord) []any {
		return append([]any{engine.TokenID(r.Hash)}, tokens.values(r)...)
	},
	dests: func(r *engine.TokenRecord) []any {
		return append([]any{new(string)}, tokens.dests(r)...)
	},
	filter: "kind = 'api'",
}

// zeroIfNull scans a nullable timestamptz column into a time, NULL (and
// an infinity, see neverDelivered) as the zero time.
type zeroIfNull struct{ t *time.Time }

// ScanTimestamptz implements pgtype.TimestamptzScanner.
func (z zeroIfNull) ScanTimestamptz(v pgtype.Timestamptz) error {
	*z.t = time.Time{}
	if v.Valid && v.InfinityModifier == pgtype.Finite {
		*z.t = v.Time.UTC()
	}
	return nil
}

// storedAnswer scans a receipt's body, after its fingerprint version and
// status, into its answer.
type storedAnswer struct{ r *engine.Receipt }

// ScanBytes implements pgtype.BytesScanner.
func (s storedAnswer) ScanBytes(v []byte) error {
	s.r.Answer = engine.StoredAnswer(s.r.Kind(), s.r.Answer.Status, v)
	s.r.Limit = s.r.Answer.Limit
	return nil
}

// storedPayload scans an event's payload.
type storedPayload struct{ e *engine.Event }

// ScanBytes implements pgtype.BytesScanner.
func (s storedPayload) ScanBytes(v []byte) error {
	*s.e = s.e.WithStoredPayload(bytes.Clone(v))
	return nil
}

// kindOf scans a tombstone's status, after its fingerprint version, and
// sets its answer's kind.
type kindOf struct {
	kind    *engine.OperationKind
	version *engine.FingerprintVersion
	status  *string
}

// ScanText implements pgtype.TextScanner.
func (k kindOf) ScanText(v pgtype.Text) error {
	*k.status = v.String
	*k.kind = k.version.Kind()
	return nil
}

// emptyIfNull scans a nullable text column into a string, NULL as "".
type emptyIfNull struct{ s *string }

// ScanText implements pgtype.TextScanner.
func (e emptyIfNull) ScanText(v pgtype.Text) error {
	*e.s = v.String // String is "" when the value is NULL.
	return nil
}

// keyList is "k1, k2" for the key columns of tb.
func (tb table[T]) keyList() string { return strings.Join(tb.columns[:tb.keys], ", ") }

// params is "$from, $from+1, …", n parameters.
func params(from, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", from+i)
	}
	return strings.Join(ps, ", ")
}

// selectSQL reads one record by its key.
func (tb table[T]) selectSQL() string {
	return fmt.Sprintf("SELECT %s FROM %s WHERE (%s) = (%s)", strings.Join(tb.columns, ", "), tb.name, tb.keyList(), params(1, tb.keys))
}

// pageSQL reads the next page of records in key order: the first page, or
// the one after the key given as parameters.
func (tb table[T]) pageSQL(first bool) string {
	var conds []string
	if tb.filter != "" {
		conds = append(conds, tb.filter)
	}
	if !first {
		conds = append(conds, fmt.Sprintf("(%s) > (%s)", tb.keyList(), params(1, tb.keys)))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s LIMIT %d", strings.Join(tb.columns, ", "), tb.name, where, tb.keyList(), pageSize)
}

// insertSQL inserts a record and fails with a unique violation if its key
// exists.
func (tb table[T]) insertSQL() string {
	columns, values := strings.Join(tb.columns, ", "), params(1, len(tb.columns))
	if tb.stamped {
		columns, values = columns+", "+writerColumn, values+", "+writerSchema
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", tb.name, columns, values)
}

// writerColumn is the column in which a write to a stamped table states
// writerSchema, the schema version its writer knows: the newest. (The
// trigger that empties the column runs before the INSERT of an upsert
// finds the row it conflicts with, and so empties EXCLUDED's too: the
// upsert's update states the version again, see upsertSQL.)
const writerColumn = "writer_schema"

var writerSchema = fmt.Sprint(SchemaVersion)

// deleteSQL deletes the record with the key given as parameters.
func (tb table[T]) deleteSQL() string {
	return fmt.Sprintf("DELETE FROM %s WHERE (%s) = (%s)", tb.name, tb.keyList(), params(1, tb.keys))
}

// upsertSQL inserts a record or overwrites the one with its key.
func (tb table[T]) upsertSQL() string {
	set := make([]string, 0, len(tb.columns)-tb.keys+1)
	for _, c := range tb.columns[tb.keys:] {
		set = append(set, c+" = EXCLUDED."+c)
	}
	if tb.stamped {
		set = append(set, writerColumn+" = "+writerSchema)
	}
	return fmt.Sprintf("%s ON CONFLICT (%s) DO UPDATE SET %s", tb.insertSQL(), tb.keyList(), strings.Join(set, ", "))
}

// txConn runs the statements of a transaction: a pgx.Tx, or the
// connection of a group, which sends its own BEGIN and COMMIT.
type txConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// tx adapts a pgx transaction to engine.Tx.
type tx struct {
	ctx   context.Context
	tx    txConn
	write bool
	// err is the first statement that failed. PostgreSQL aborts the
	// transaction then, so every later statement fails with it too.
	err error
	// read records, for each row this transaction has looked up or written,
	// whether it exists: a write to a row read as absent must insert it.
	read map[rowID]bool
	// m is set when the transaction is one decision of a group (see
	// group.go), whose rows and writes the group keeps.
	m *member
}

var _ engine.Tx = (*tx)(nil)

// rowID names one row: its table and its key values joined by 0x00.
type rowID struct{ table, key string }

func rowOf[T any](tb table[T], key []any) rowID {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = fmt.Sprint(k)
	}
	return rowID{tb.name, strings.Join(parts, "\x00")}
}

// usable returns the error of an aborted transaction.
func (t *tx) usable() error {
	if t.err != nil {
		return fmt.Errorf("pgstore: transaction aborted by an earlier error: %w", t.err)
	}
	if t.m != nil {
		if err := t.m.usable(); err != nil {
			return t.fail(err)
		}
	}
	return nil
}

// fail records the first failed statement and returns err.
func (t *tx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	if t.m != nil {
		t.m.g.recover(t.m)
	}
	return err
}

func (t *tx) remember(id rowID, exists bool) {
	if t.read == nil {
		t.read = map[rowID]bool{}
	}
	t.read[id] = exists
}

// get reads the record of tb with key into r. suffix is appended to the
// query (FOR UPDATE).
func get[T any](t *tx, tb table[T], suffix string, key ...any) (r T, ok bool, err error) {
	if err := t.usable(); err != nil {
		return r, false, err
	}
	if t.m != nil {
		return memberGet(t, tb, suffix, key)
	}
	id := rowOf(tb, key)
	err = t.tx.QueryRow(t.ctx, tb.selectSQL()+suffix, key...).Scan(tb.dests(&r)...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		t.remember(id, false)
		return r, false, nil
	case err != nil:
		return r, false, t.fail(fmt.Errorf("read %s %q: %w", tb.name, id.key, err))
	}
	t.remember(id, true)
	return r, true, nil
}

// put writes r: with a plain INSERT when this transaction read its row as
// absent, so that a concurrent insert of the same key fails it (and Update
// retries) instead of being overwritten; with an upsert otherwise.
func put[T any](t *tx, tb table[T], r T) error {
	if !t.write {
		return ErrReadOnly
	}
	if err := t.usable(); err != nil {
		return err
	}
	if t.m != nil {
		return memberPut(t, tb, r)
	}
	values := tb.values(r)
	id := rowOf(tb, values[:tb.keys])
	query := tb.upsertSQL()
	if exists, known := t.read[id]; known && !exists {
		query = tb.insertSQL()
	}
	if _, err := t.tx.Exec(t.ctx, query, values...); err != nil {
		return t.fail(fmt.Errorf("write %s %q: %w", tb.name, id.key, err))
	}
	t.remember(id, true)
	return nil
}

// deleteRow removes the row of tb with key, if it exists; in a group the
// DELETE is sent with the decision's other writes.
func deleteRow[T any](t *tx, tb table[T], key ...any) error {
	if !t.write {
		return ErrReadOnly
	}
	if err := t.usable(); err != nil {
		return err
	}
	if t.m != nil {
		return memberDelete(t, tb, key...)
	}
	id := rowOf(tb, key)
	if err := t.exec(fmt.Sprintf("delete %s %q", tb.name, id.key), tb.deleteSQL(), key...); err != nil {
		return err
	}
	t.remember(id, false)
	return nil
}

// forEach calls fn for every record of tb in key order, reading a page at a
// time.
func forEach[T any](t *tx, tb table[T], fn func(T) error) error {
	var after []any
	for {
		if err := t.usable(); err != nil {
			return err
		}
		if err := t.direct(); err != nil {
			return err
		}
		rows, err := t.tx.Query(t.ctx, tb.pageSQL(after == nil), after...)
		if err != nil {
			return t.fail(fmt.Errorf("scan %s: %w", tb.name, err))
		}
		page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) {
			var r T
			err := row.Scan(tb.dests(&r)...)
			return r, err
		})
		if err != nil {
			return t.fail(fmt.Errorf("scan %s: %w", tb.name, err))
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		after = tb.values(page[len(page)-1])[:tb.keys]
	}
}

// The time-ordered scans read receipts and tombstones through the indexes
// of migration 0006 on (created_at, actor, operation_key).

// oldestSQL reads the next page of tb's records created before $1, oldest
// first; after the first page, only those after the position ($2, $3, $4).
func (tb table[T]) oldestSQL(after bool, limit int) string {
	where := "created_at < $1"
	if after {
		where += " AND (created_at, actor, operation_key) > ($2, $3, $4)"
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY created_at, actor, operation_key LIMIT %d", strings.Join(tb.columns, ", "), tb.name, where, limit)
}

// newestSQL reads the next page of tb's records in the order of
// engine.TimePosition (newest first, ties by actor and key): with a
// position, those at ($1, $2, $3) or after it, or only those after it when
// past is set.
func (tb table[T]) newestSQL(from, past bool, limit int) string {
	where := ""
	if from {
		op := ">="
		if past {
			op = ">"
		}
		where = " WHERE created_at <= $1 AND (created_at < $1 OR (actor, operation_key) " + op + " ($2, $3))"
	}
	return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY created_at DESC, actor, operation_key LIMIT %d", strings.Join(tb.columns, ", "), tb.name, where, limit)
}

// forEachByTime calls fn for the records of tb (receipts or tombstones) that
// query selects, a page at a time (see paged), in the order of their
// position.
func forEachByTime[T any](t *tx, tb table[T], position func(T) engine.TimePosition, query func(p *engine.TimePosition, limit int) (string, []any), fn func(T) error) error {
	return paged(t, tb, "by time", position, query, fn)
}

// firstPage is the rows the first query of a paged scan reads; each later
// query reads twice as many, up to pageSize.
const firstPage = 8

// paged calls fn for the records of tb that query selects, a page at a
// time: query(p, limit) reads the first page when p is nil, and the page
// after the record at position p (what at returns of a record) otherwise.
// Pages start small and grow to pageSize, so a scan that stops early (a
// page of a list) reads few rows more than it uses, and fn is called
// between queries, so it may use the transaction. what names the scan in
// errors.
func paged[T, P any](t *tx, tb table[T], what string, at func(T) P, query func(p *P, limit int) (string, []any), fn func(T) error) error {
	var p *P
	for limit := firstPage; ; limit = min(2*limit, pageSize) {
		if err := t.usable(); err != nil {
			return err
		}
		if err := t.direct(); err != nil {
			return err
		}
		sql, args := query(p, limit)
		rows, err := t.tx.Query(t.ctx, sql, args...)
		if err != nil {
			return t.fail(fmt.Errorf("scan %s %s: %w", tb.name, what, err))
		}
		page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) {
			var r T
			err := row.Scan(tb.dests(&r)...)
			return r, err
		})
		if err != nil {
			return t.fail(fmt.Errorf("scan %s %s: %w", tb.name, what, err))
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		last := at(page[len(page)-1])
		p = &last
	}
}

// oldest is forEachByTime over the records of tb created before at.
func oldest[T any](t *tx, tb table[T], position func(T) engine.TimePosition, at time.Time, fn func(T) error) error {
	return forEachByTime(t, tb, position, func(p *engine.TimePosition, limit int) (string, []any) {
		if p == nil {
			return tb.oldestSQL(false, limit), []any{at}
		}
		return tb.oldestSQL(true, limit), []any{at, p.At, p.Actor, string(p.Key)}
	}, fn)
}

// newest is forEachByTime over the records of tb from the one at from on,
// newest first.
func newest[T any](t *tx, tb table[T], position func(T) engine.TimePosition, from engine.TimePosition, fn func(T) error) error {
	return forEachByTime(t, tb, position, func(p *engine.TimePosition, limit int) (string, []any) {
		switch {
		case p != nil:
			return tb.newestSQL(true, true, limit), []any{p.At, p.Actor, string(p.Key)}
		case from.IsZero():
			return tb.newestSQL(false, false, limit), nil
		}
		return tb.newestSQL(true, false, limit), []any{from.At, from.Actor, string(from.Key)}
	}, fn)
}

func (t *tx) ForEachReceiptCreatedBefore(at time.Time, fn func(engine.Receipt) error) error {
	return oldest(t, receipts, engine.ReceiptPosition, at, fn)
}

func (t *tx) ForEachReceiptNewestFirst(from engine.TimePosition, fn func(engine.Receipt) error) error {
	return newest(t, receipts, engine.ReceiptPosition, from, fn)
}

func (t *tx) ForEachTombstoneNewestFirst(from engine.TimePosition, fn func(engine.Tombstone) error) error {
	return newest(t, tombstones, engine.TombstonePosition, from, fn)
}

// Workshop reads a workshop; inside Update it also locks the row until the
// transaction ends, which queues concurrent reservations of that workshop
// (and only of that workshop).
func (t *tx) Workshop(id string) (engine.Workshop, bool, error) {
	return get(t, workshops, t.lockRead(), id)
}

// lockRead is the suffix of reads of rows whose decisions must not be made
// by two transactions at once: FOR UPDATE in a write transaction.
func (t *tx) lockRead() string {
	if t.write {
		return " FOR UPDATE"
	}
	return ""
}

func (t *tx) PutWorkshop(w engine.Workshop) error { return put(t, workshops, w) }

func (t *tx) ForEachWorkshop(fn func(engine.Workshop) error) error {
	return forEach(t, workshops, fn)
}

// Reservation locks the row in a write transaction, so that two
// transactions cancelling one reservation cannot both see it active: the
// second waits and then reads it cancelled.
func (t *tx) Reservation(id string) (engine.Reservation, bool, error) {
	return get(t, reservations, t.lockRead(), id)
}

func (t *tx) PutReservation(r engine.Reservation) error { return put(t, reservations, r) }

func (t *tx) ForEachReservation(fn func(engine.Reservation) error) error {
	return forEach(t, reservations, fn)
}

func (t *tx) Receipt(actor string, key engine.OperationKey) (engine.Receipt, bool, error) {
	return get(t, receipts, "", actor, string(key))
}

func (t *tx) PutReceipt(r engine.Receipt) error { return put(t, receipts, r) }

func (t *tx) ForEachReceipt(fn func(engine.Receipt) error) error {
	return forEach(t, receipts, fn)
}

// Token locks the row in a write transaction, so that two transactions
// consuming one login code cannot both see it: the second waits and then
// finds it deleted.
func (t *tx) Token(hash string) (engine.TokenRecord, bool, error) {
	return get(t, tokens, t.lockRead(), hash)
}

func (t *tx) ForEachToken(fn func(engine.TokenRecord) error) error {
	return forEach(t, tokens, fn)
}

func (t *tx) DeleteToken(hash string) error { return deleteRow(t, tokens, hash) }

func (t *tx) PutToken(r engine.TokenRecord) error { return put(t, tokens, r) }

// APIToken finds the hash of the API token id through the index of
// migration 0010, then reads (and in a write transaction locks) its row as
// Token does.
func (t *tx) APIToken(id string) (engine.TokenRecord, bool, error) {
	if err := t.usable(); err != nil {
		return engine.TokenRecord{}, false, err
	}
	if err := t.direct(); err != nil {
		return engine.TokenRecord{}, false, err
	}
	var hash string
	err := t.tx.QueryRow(t.ctx, "SELECT hash FROM tokens WHERE id = $1 AND kind = 'api'", id).Scan(&hash)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return engine.TokenRecord{}, false, nil
	case err != nil:
		return engine.TokenRecord{}, false, t.fail(fmt.Errorf("read tokens by id %q: %w", id, err))
	}
	return t.Token(hash)
}

func (t *tx) ForEachAPIToken(fn func(engine.TokenRecord) error) error {
	return forEach(t, apiTokens, fn)
}

// exec runs one write statement that is not a put.
func (t *tx) exec(what string, query string, args ...any) error {
	if !t.write {
		return ErrReadOnly
	}
	if err := t.usable(); err != nil {
		return err
	}
	if err := t.direct(); err != nil {
		return err
	}
	if _, err := t.tx.Exec(t.ctx, query, args...); err != nil {
		return t.fail(fmt.Errorf("%s: %w", what, err))
	}
	return nil
}

func (t *tx) DeleteReceipt(actor string, key engine.OperationKey) error {
	return deleteRow(t, receipts, actor, string(key))
}

func (t *tx) Tombstone(actor string, key engine.OperationKey) (engine.Tombstone, bool, error) {
	return get(t, tombstones, "", actor, string(key))
}

func (t *tx) PutTombstone(r engine.Tombstone) error { return put(t, tombstones, r) }

func (t *tx) ForEachTombstone(fn func(engine.Tombstone) error) error {
	return forEach(t, tombstones, fn)
}

// AddEvent inserts with a plain INSERT, so an existing id fails.
func (t *tx) AddEvent(e engine.Event) error {
	if t.m != nil && t.write {
		if err := t.usable(); err != nil {
			return err
		}
		return memberAdd(t, events, e)
	}
	return t.exec("add event", events.insertSQL(), events.values(e)...)
}

func (t *tx) MarkEventDelivered(id string, at time.Time) error {
	if err := t.exec("mark event delivered", "UPDATE events SET delivered_at = $2 WHERE id = $1", id, at); err != nil {
		return err
	}
	if t.m != nil {
		// The group answers later reads of the event from memory, so the
		// update in place must show there too.
		row := rowOf(events, []any{id})
		if e, known := t.m.lookup(row); known && e.exists {
			ev := e.val.(engine.Event)
			ev.DeliveredAt = at
			t.m.remember(row, entry{val: ev, exists: true})
		}
	}
	return nil
}

func (t *tx) Event(id string) (engine.Event, bool, error) {
	return get(t, events, t.lockRead(), id)
}

func (t *tx) ForEachEvent(fn func(engine.Event) error) error {
	return forEach(t, events, fn)
}

// ForEachPendingEvent pages through the partial index of undelivered events.
func (t *tx) ForEachPendingEvent(fn func(engine.Event) error) error {
	return forEach(t, pendingEvents, fn)
}

// pendingEvents is the events table seen through its partial index of
// undelivered rows; it is only read.
var pendingEvents = func() table[engine.Event] {
	tb := events
	tb.filter = "delivered_at IS NULL"
	return tb
}()

// Hold locks the row in a write transaction, so that two transactions
// settling one hold cannot both see it open: the second waits and then
// reads it settled. It locks the row of the hold's workshop first, as a
// group's first read does (see lockedWorkshops): a decision that needs
// places cleans up the holds past their deadline of the workshop it has
// locked, so every write transaction locks a workshop before any hold of
// it, and none can hold a hold's row while it waits for the workshop's
// row that another holds while it waits for that hold.
func (t *tx) Hold(id string) (engine.Hold, bool, error) { return getOfWorkshop(t, holds, id) }

// getOfWorkshop reads record id of tb, a table of records that belong to
// one workshop each (a column workshop); in a write transaction that is
// not a group's (which locks them as it reads them ahead) it first locks
// the row of the record's workshop, if the record exists, and then the
// record's.
func getOfWorkshop[T any](t *tx, tb table[T], id string) (T, bool, error) {
	if t.write && t.m == nil {
		lock := fmt.Sprintf("SELECT 1 FROM workshops WHERE id = (SELECT workshop FROM %s WHERE id = $1) FOR UPDATE", tb.name)
		if err := t.exec(fmt.Sprintf("lock the workshop of %s %q", tb.name, id), lock, id); err != nil {
			var zero T
			return zero, false, err
		}
	}
	return get(t, tb, t.lockRead(), id)
}

func (t *tx) PutHold(h engine.Hold) error { return put(t, holds, h) }

func (t *tx) ForEachHold(fn func(engine.Hold) error) error { return forEach(t, holds, fn) }

// ForEachOpenHold reads the due open holds of workshop through the partial
// index holds_open, a page at a time (see paged).
func (t *tx) ForEachOpenHold(workshop string, through time.Time, fn func(engine.Hold) error) error {
	type position struct {
		at time.Time
		id string
	}
	return paged(t, holds, "open of "+workshop, func(h engine.Hold) position { return position{h.ExpiresAt, h.ID} },
		func(p *position, limit int) (string, []any) {
			if p == nil {
				return openHoldsSQL(false, limit), []any{workshop, through}
			}
			return openHoldsSQL(true, limit), []any{workshop, through, p.at, p.id}
		}, fn)
}

// openHoldsSQL reads the next page of the open holds of workshop $1 whose
// deadline is at or before $2, by deadline and id: after the first page,
// those after the hold at ($3, $4).
func openHoldsSQL(after bool, limit int) string {
	where := "state = 'held' AND workshop = $1 AND expires_at <= $2"
	if after {
		where += " AND (expires_at, id) > ($3, $4)"
	}
	return fmt.Sprintf("SELECT %s FROM holds WHERE %s ORDER BY expires_at, id LIMIT %d", strings.Join(holds.columns, ", "), where, limit)
}

// ForEachReservationIn pages through the index reservations_by_workshop.
func (t *tx) ForEachReservationIn(workshop string, after engine.PersonPosition, fn func(engine.Reservation) error) error {
	return inWorkshop(t, reservations, workshop, after, func(r engine.Reservation) engine.PersonPosition {
		return engine.PersonPosition{Actor: r.Actor, ID: r.ID}
	}, fn)
}

// ForEachHoldIn pages through the index holds_by_workshop.
func (t *tx) ForEachHoldIn(workshop string, after engine.PersonPosition, fn func(engine.Hold) error) error {
	return inWorkshop(t, holds, workshop, after, func(h engine.Hold) engine.PersonPosition {
		return engine.PersonPosition{Actor: h.Actor, ID: h.ID}
	}, fn)
}

// inWorkshop calls fn for the records of tb (keyed by id) of workshop
// after position after, in order of actor, then id, a page at a time (see
// paged) through the table's index on (workshop, actor, id).
func inWorkshop[T any](t *tx, tb table[T], workshop string, after engine.PersonPosition, at func(T) engine.PersonPosition, fn func(T) error) error {
	return paged(t, tb, "in "+workshop, at, func(p *engine.PersonPosition, limit int) (string, []any) {
		if p == nil {
			p = &after
		}
		return fmt.Sprintf("SELECT %s FROM %s WHERE workshop = $1 AND (actor, id) > ($2, $3) ORDER BY workshop, actor, id LIMIT %d",
			strings.Join(tb.columns, ", "), tb.name, limit), []any{workshop, p.Actor, p.ID}
	}, fn)
}

// DeleteWorkshop removes the workshop's row.
func (t *tx) DeleteWorkshop(id string) error { return deleteRow(t, workshops, id) }

// ForEachReservationOf pages through the index reservations_by_actor.
func (t *tx) ForEachReservationOf(actor, before string, fn func(engine.Reservation) error) error {
	return newestOf(t, reservations, actor, before, func(r engine.Reservation) string { return r.ID }, fn)
}

// ForEachHoldOf pages through the index holds_by_actor.
func (t *tx) ForEachHoldOf(actor, before string, fn func(engine.Hold) error) error {
	return newestOf(t, holds, actor, before, func(h engine.Hold) string { return h.ID }, fn)
}

// newestOf calls fn for the records of tb (keyed by id) of actor whose id
// is below before ("" for any), in descending order of id, a page at a time
// (see paged) through the table's index on (actor, id): each query seeks
// to its first row in that index, so a page costs the rows it reads, not
// the actor's rows above it.
func newestOf[T any](t *tx, tb table[T], actor, before string, id func(T) string, fn func(T) error) error {
	if before == "" {
		before = aboveEveryID
	}
	return paged(t, tb, "of "+actor, id, func(p *string, limit int) (string, []any) {
		if p != nil {
			return newestOfSQL(tb, limit), []any{actor, *p}
		}
		return newestOfSQL(tb, limit), []any{actor, before}
	}, fn)
}

// aboveEveryID sorts after every id (32 hex digits) in the ids' collation
// (C: byte order).
const aboveEveryID = "\U0010FFFF"

// newestOfSQL reads the next page of the records of tb of actor $1 whose
// id is below $2, newest first. The actor's range is bounded by row
// comparisons on (actor, id) rather than actor = $1, and ordered by both
// columns, so that only the index on (actor, id) bounds and orders the
// scan: with an equality on the actor, a prepared statement's generic
// plan, which knows neither the actor nor the cursor, may prefer the
// primary key's order of ids and filter the actor's rows from the newest
// on, which reads every row above the page of an actor with few.
func newestOfSQL[T any](tb table[T], limit int) string {
	return fmt.Sprintf("SELECT %s FROM %s WHERE (actor, id) > ($1, '') AND (actor, id) < ($1, $2) ORDER BY actor DESC, id DESC LIMIT %d",
		strings.Join(tb.columns, ", "), tb.name, limit)
}

// HasReceiptsOf asks the server whether a receipt or a tombstone of actor
// exists; both tables' keys begin with the actor.
func (t *tx) HasReceiptsOf(actor string) (bool, error) {
	if err := t.usable(); err != nil {
		return false, err
	}
	if err := t.direct(); err != nil {
		return false, err
	}
	var has bool
	err := t.tx.QueryRow(t.ctx, "SELECT EXISTS (SELECT 1 FROM receipts WHERE actor = $1) OR EXISTS (SELECT 1 FROM tombstones WHERE actor = $1)", actor).Scan(&has)
	if err != nil {
		return false, t.fail(fmt.Errorf("look for receipts of %s: %w", actor, err))
	}
	return has, nil
}

func (t *tx) Binding(kind, subject string) (engine.Binding, bool, error) {
	return get(t, bindings, "", kind, subject)
}

func (t *tx) BindingOfActor(actor string) (engine.Binding, bool, error) {
	return get(t, bindingsByActor, "", actor)
}

// AddBinding inserts with a plain INSERT, so a bound subject or a bound
// actor fails with a unique violation, which Update retries: the run
// after it finds the binding that won. In a group the insert is sent with
// the decision's other writes, and the decisions after it find the
// binding in memory by subject and by actor.
func (t *tx) AddBinding(b engine.Binding) error {
	if t.m != nil && t.write {
		if err := t.usable(); err != nil {
			return err
		}
		if err := memberAdd(t, bindings, b); err != nil {
			return err
		}
		t.m.remember(rowOf(bindingsByActor, []any{b.Actor}), entry{val: b, exists: true})
		return nil
	}
	return t.exec("add binding", bindings.insertSQL(), bindings.values(b)...)
}

func (t *tx) ForEachBinding(fn func(engine.Binding) error) error {
	return forEach(t, bindings, fn)
}

func (t *tx) Profile(actor string) (engine.Profile, bool, error) {
	return get(t, profiles, "", actor)
}

func (t *tx) PutProfile(p engine.Profile) error { return put(t, profiles, p) }

func (t *tx) ForEachProfile(fn func(engine.Profile) error) error {
	return forEach(t, profiles, fn)
}
