package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/reserve/reserve/internal/api"
)

// Backup streams the daemon's consistent snapshot (admin only) into w and
// returns how many bytes it wrote. An answer shorter than its announced
// Content-Length is an error, so a backup cut short never passes as
// complete. A problem answer (501 not_implemented for a PostgreSQL store)
// is an *engine.Error.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.request(ctx, http.MethodGet, api.PathBackup, nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		return 0, answerError(resp, data)
	}
	if resp.ContentLength < 0 {
		return 0, fmt.Errorf("backup from %s: the answer announces no length, so its completeness cannot be checked", c.where)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("backup from %s: after %d of %d bytes: %w", c.where, n, resp.ContentLength, err)
	}
	if n != resp.ContentLength {
		return n, fmt.Errorf("backup from %s: got %d of %d bytes", c.where, n, resp.ContentLength)
	}
	return n, nil
}

// OperationsQuery selects a page of the operations view; zero members
// select everything.
type OperationsQuery struct {
	Actor   string
	Since   time.Time
	Outcome string
	Limit   int
	Cursor  string
}

// Operations returns one page of the stored operations of every actor,
// newest first (admin only).
func (c *Client) Operations(ctx context.Context, q OperationsQuery) (api.OperationPage, error) {
	v := url.Values{}
	for name, value := range map[string]string{"actor": q.Actor, "outcome": q.Outcome, "cursor": q.Cursor} {
		if value != "" {
			v.Set(name, value)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := api.PathAdminOps
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var page api.OperationPage
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &page, http.StatusOK)
	if page.Operations == nil {
		page.Operations = []api.OperationRecord{}
	}
	return page, err
}
