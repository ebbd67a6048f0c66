package client

import (
	"context"
	"net"
	"time"
)

// SendError exposes how a request that got no answer on a connection that
// does not count its bytes is classified.
func (c *Client) SendError(method, path string, err error, sent bool) error {
	c.init()
	return c.sendError(method, path, err, sent, false)
}

// CountingConn wraps c as the client's own dialers do, counting the bytes
// written to it.
func CountingConn(c net.Conn) net.Conn { return &countingConn{Conn: c} }

// SetWait makes c wait with wait before it sends a request that the daemon
// answered rate_limited again.
func (c *Client) SetWait(wait func(ctx context.Context, d time.Duration) error) { c.wait = wait }
