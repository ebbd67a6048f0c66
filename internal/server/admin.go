package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/reserve/reserve/docs"
	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// Backup streams a consistent snapshot of the store to w while the daemon
// serves, holding no transaction while w is slow to take it (boltstore);
// size is told the snapshot's length before the first byte, and an error
// before that means nothing was written.
type Backup func(ctx context.Context, size func(int64), w io.Writer) (int64, error)

// backup is GET /api/v1/admin/backup: the whole database as one consistent
// snapshot, streamed while the daemon goes on serving. A store without an
// online backup (PostgreSQL, which pg_dump backs up) answers 501
// not_implemented.
func (s *Server) backup(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	if s.backupFn == nil {
		return engine.Errorf(api.CodeNotImplemented, "this daemon's store has no online backup through the API; back up a PostgreSQL store with pg_dump")
	}
	// A large snapshot may take longer than the listener's write timeout,
	// but a client that stops reading must not hold the connection and the
	// snapshot's temporary file (as large as the database) for ever: every
	// write gets backupStallTimeout to make progress.
	rc := http.NewResponseController(w)
	w = &progressWriter{w: w, extend: func() error { return rc.SetWriteDeadline(time.Now().Add(backupStallTimeout)) }}
	started := false
	_, err := s.backupFn(r.Context(), func(size int64) {
		h := w.Header()
		h.Set("Content-Type", api.MediaBackup)
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		h.Set("Content-Disposition", `attachment; filename="reserved-backup.db"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		started = true
	}, w)
	if err != nil && !started {
		return err
	}
	if err != nil {
		// The answer is cut short of its Content-Length, so the client
		// sees a broken backup, never a silently truncated one.
		infoOf(r).err = err
	}
	return nil
}

// backupStallTimeout is how long a backup client may go without reading
// before the backup is cut off.
const backupStallTimeout = 30 * time.Second

// progressWriter moves the connection's write deadline forward before every
// write, so a slow client that keeps reading may take as long as it needs
// and one that stalls is cut off.
type progressWriter struct {
	w      http.ResponseWriter
	extend func() error
}

func (p *progressWriter) Header() http.Header    { return p.w.Header() }
func (p *progressWriter) WriteHeader(status int) { p.w.WriteHeader(status) }

func (p *progressWriter) Write(b []byte) (int, error) {
	if err := p.extend(); err != nil {
		return 0, fmt.Errorf("backup: extend the write deadline: %w", err)
	}
	return p.w.Write(b)
}

// listOperations is GET /api/v1/admin/operations: the stored operations of
// every actor, newest first, filtered by actor, since, outcome, one page of
// at most limit with the cursor of the next.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request, _ engine.Principal) error {
	q, err := queryOf(r, "actor", "since", "outcome", "limit", "cursor")
	if err != nil {
		return err
	}
	f := engine.OperationFilter{Actor: q.Get("actor"), Outcome: q.Get("outcome"), After: q.Get("cursor")}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return engine.Errorf(engine.CodeRequestContract, "query parameter \"since\" must be an RFC 3339 time such as 2026-11-29T10:00:00Z")
		}
		f.Since = t
	}
	if f.Limit, err = queryLimit(q, engine.MaxOperationsLimit); err != nil {
		return err
	}
	ops, next, err := s.eng.Operations(r.Context(), f)
	if err != nil {
		return err
	}
	page := api.OperationPage{Operations: make([]api.OperationRecord, len(ops)), NextCursor: next}
	for i, op := range ops {
		page.Operations[i] = api.OperationRecord{
			Actor: op.Actor, Operation: op.Operation, Kind: op.Answer.Kind, Outcome: op.Answer.Status, HTTPStatus: StatusOfAnswer(op.Answer),
			Workshop: op.Answer.Workshop, Quantity: op.Answer.Quantity, ReservationID: op.Answer.ReservationID, HoldID: op.Answer.HoldID, DeliveryID: op.Answer.DeliveryID, EntryID: op.Answer.EntryID,
			CreatedAt: op.CreatedAt, Expired: op.Expired,
		}
	}
	return writeJSON(w, http.StatusOK, page)
}

// openAPI is GET /api/v1/openapi.yaml: the OpenAPI 3.1 description of this
// API (docs/openapi.yaml, embedded).
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ engine.Principal) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.WriteHeader(http.StatusOK)
	w.Write(docs.OpenAPI)
	return nil
}
