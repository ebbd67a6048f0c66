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
	c.init()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+api.PathBackup, nil)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if c.BaseURL != "" && c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.sendError(http.MethodGet, api.PathBackup, err)
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
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Outcome != "" {
		v.Set("outcome", q.Outcome)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
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
