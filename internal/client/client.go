// Package client is the typed client of reserve's HTTP API v1, used by the
// tests and by reservectl. The zero Client talks to the local daemon over
// its default Unix socket; a BaseURL and Token select TCP instead. Problem
// answers come back as *engine.Error with the server's code, and a daemon
// that cannot be reached gives "cannot connect to reserved at …: is it
// running?".
//
// It must not import the server, bbolt or any command tree.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/peercred"
)

// maxAnswerBytes bounds how much of an answer the client reads.
const maxAnswerBytes = 1 << 20

// Client calls a reserved daemon. Set its fields before the first call and
// do not copy it afterwards; it is safe for concurrent use.
type Client struct {
	// Socket is the daemon's Unix socket; empty means the default
	// ($RESERVED_SOCKET, else the daemon's default path). It is used when
	// BaseURL is empty.
	Socket string
	// BaseURL selects TCP, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Token is the bearer token sent over TCP.
	Token string
	// HTTPClient, if set, sends the requests (its transport must reach the
	// daemon); nil means a client built for Socket or BaseURL.
	HTTPClient *http.Client

	// wait waits d before a request that the daemon answered
	// rate_limited is sent again, or until ctx is done; nil means a timer
	// (tests move the daemon's clock instead).
	wait func(ctx context.Context, d time.Duration) error

	once  sync.Once
	hc    *http.Client
	base  string
	where string
}

// maxIdleConns is how many connections to the daemon a Client keeps open
// between requests, enough for the import's and the bench's concurrent
// senders: with net/http's default of two, every sender beyond two opened
// a new connection for each request.
const maxIdleConns = 64

func (c *Client) init() {
	c.once.Do(func() {
		c.hc = c.HTTPClient
		if c.BaseURL != "" {
			c.base = strings.TrimSuffix(c.BaseURL, "/")
			c.where = c.base
			if c.hc == nil {
				t := http.DefaultTransport.(*http.Transport).Clone()
				t.MaxIdleConnsPerHost = maxIdleConns
				d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
				t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					conn, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &countingConn{Conn: conn}, nil
				}
				c.hc = &http.Client{Transport: t}
			}
			return
		}
		socket := c.Socket
		if socket == "" {
			socket = paths.Socket()
		}
		c.base, c.where = "http://reserved.sock", socket
		if c.hc == nil {
			var d net.Dialer
			c.hc = &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					conn, err := dialSocket(ctx, &d, socket)
					if err != nil {
						return nil, err
					}
					return &countingConn{Conn: conn}, nil
				},
				MaxIdleConnsPerHost: maxIdleConns,
			}}
		}
	})
}

// countingConn counts the bytes written to a connection, so that the
// client can tell a request of which no byte reached the daemon's
// connection from one that did, whatever the transport buffered.
type countingConn struct {
	net.Conn
	written atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// sendTrace follows the attempts of one request (the transport may try a
// request with an Idempotency-Key again on a new connection) and tells
// whether any of them wrote a byte of it to its connection: after that the
// daemon may have received it.
type sendTrace struct {
	mu       sync.Mutex
	attempts []sendAttempt
	// headers says that an attempt wrote the request's headers to the
	// transport's buffer, which is all a connection the client did not
	// dial (Client.HTTPClient) tells.
	headers bool
}

// sendAttempt is one connection a request was sent on, with the bytes
// written to it before.
type sendAttempt struct {
	conn   *countingConn
	before int64
}

func (t *sendTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if cc, ok := info.Conn.(*countingConn); ok {
				t.mu.Lock()
				t.attempts = append(t.attempts, sendAttempt{cc, cc.written.Load()})
				t.mu.Unlock()
			}
		},
		WroteHeaders: func() {
			t.mu.Lock()
			t.headers = true
			t.mu.Unlock()
		},
	}
}

// sent reports whether any attempt may have reached the daemon: it wrote
// bytes to its connection, or, on a connection that does not count them,
// its headers to the transport's buffer.
func (t *sendTrace) sent() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.attempts {
		if a.conn.written.Load() > a.before {
			return true
		}
	}
	return len(t.attempts) == 0 && t.headers
}

// connected reports whether an attempt got a connection that counts its
// bytes: then sent tells exactly whether a byte of the request reached it.
func (t *sendTrace) connected() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.attempts) > 0
}

// dialSocket connects to the Unix socket at path unless paths refuses its
// owner: the file's owner before connecting, and after connecting the
// process that accepted (from the kernel, where the system tells), which a
// file swapped in between the two cannot fool.
func dialSocket(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	if err := paths.CheckSocketOwner(path); err != nil {
		return nil, err
	}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if uid, err := peercred.UID(conn); err == nil {
		if err := paths.CheckSocketPeer(path, uid); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// Where names the daemon the client talks to: the socket path or the base
// URL.
func (c *Client) Where() string {
	c.init()
	return c.where
}

// ConnectError means the daemon could not be reached at all.
type ConnectError struct {
	Where string
	Err   error
	// Socket says that Where is a Unix socket's path (else a base URL).
	Socket bool
	// HungUp says that the daemon accepted the connection and closed it
	// before any of the request was written to it.
	HungUp bool
}

func (e *ConnectError) Error() string {
	var owner *paths.SocketOwnerError
	switch {
	case errors.As(e.Err, &owner):
		return fmt.Sprintf("cannot connect to reserved at %s: the socket %s", e.Where, owner.Reason())
	case e.Socket && errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("cannot connect to reserved at %s: permission denied: %s", e.Where, deniedBy(e.Where))
	case !e.Socket && errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("cannot connect to reserved at %s: %v", e.Where, e.Err)
	case e.HungUp:
		return fmt.Sprintf("cannot connect to reserved at %s: it closed the connection before the request was sent (restarting, or at its connection cap?)", e.Where)
	}
	return fmt.Sprintf("cannot connect to reserved at %s: is it running?", e.Where)
}

// Denied reports whether the daemon's socket could not be reached because
// the system denied the caller: a local refusal, which retrying does not
// change.
func (e *ConnectError) Denied() bool {
	var owner *paths.SocketOwnerError
	return errors.As(e.Err, &owner) || (e.Socket && errors.Is(e.Err, fs.ErrPermission))
}

// deniedBy says what denied the caller access to the socket at path: the
// socket's own permissions (naming its owner and mode) or a directory on
// its path that the caller may not search.
func deniedBy(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("you may not look into %s or a directory above it (uid %d)", filepath.Dir(path), os.Getuid())
	}
	owner := "uid ?"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = "uid " + strconv.FormatUint(uint64(st.Uid), 10)
		if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
			owner = u.Username + " (" + owner + ")"
		}
	}
	return fmt.Sprintf("the socket belongs to %s with mode %04o, which does not let uid %d in; ask its owner, or use a socket of your own (--socket, RESERVED_SOCKET)", owner, fi.Mode().Perm(), os.Getuid())
}

func (e *ConnectError) Unwrap() error { return e.Err }

// UnexpectedResponseError is an answer that is neither the documented
// success nor a problem detail with a code: a garbled body, a proxy's error
// page. For a reservation its outcome is unknown.
type UnexpectedResponseError struct {
	Status      int
	ContentType string
	Body        []byte
}

func (e *UnexpectedResponseError) Error() string {
	return fmt.Sprintf("unexpected answer from reserved: %d %s with %d bytes of %q", e.Status, http.StatusText(e.Status), len(e.Body), e.ContentType)
}

// Do sends one request to the daemon and returns the answer with its whole
// body (up to 1 MiB). A body is sent as application/json unless header sets
// a Content-Type; a Host in header replaces the request's host; the bearer
// token is added on TCP. Failures to reach the
// daemon are *ConnectError.
func (c *Client) Do(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, []byte, error) {
	resp, err := c.request(ctx, method, path, header, body)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return resp, data, fmt.Errorf("%s %s at %s: read answer: %w", method, path, c.where, err)
	}
	return resp, data, nil
}

// request sends one request as Do does and returns the answer with its
// body unread; the caller closes it.
func (c *Client) request(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, error) {
	c.init()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if host := header.Get("Host"); host != "" {
		req.Host = host // net/http sends req.Host, never a Host header field.
	}
	if _, set := req.Header["Content-Type"]; body != nil && !set {
		req.Header.Set("Content-Type", api.MediaJSON)
	}
	if c.BaseURL != "" && c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	var st sendTrace
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), st.trace()))
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.sendError(method, path, err, st.sent(), st.connected())
	}
	return resp, nil
}

// sendError wraps the error of a request that got no answer: a
// *ConnectError when the daemon could not be reached at all, or hung up
// before anything was sent, a *SentError when the request was sent (wholly
// or in part) and the connection then broke, so that it may have arrived.
// connected says that sent is exact: the request failed on a connection
// that counted its bytes, so with nothing sent, whatever the transport
// made of it (an end of stream, a reset, or the connection taken for one
// the daemon closed while idle), the daemon hung up before the request.
func (c *Client) sendError(method, path string, err error, sent, connected bool) error {
	var op *net.OpError
	var owner *paths.SocketOwnerError
	socket := c.BaseURL == ""
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	switch {
	case errors.As(err, &owner), socket && !sent && errors.Is(err, fs.ErrPermission):
		return &ConnectError{Where: c.where, Err: err, Socket: socket}
	case sent && !timedOut:
		return &SentError{Where: c.where, Method: method, Path: path, Err: err}
	case !sent && errors.As(err, &op) && op.Op == "dial":
		return &ConnectError{Where: c.where, Err: err, Socket: socket}
	case !sent && (hungUp(err) || connected && !timedOut):
		return &ConnectError{Where: c.where, Err: err, Socket: socket, HungUp: true}
	}
	return fmt.Errorf("%s %s at %s: %w", method, path, c.where, err)
}

// hungUp reports whether err is the daemon closing (or its kernel resetting)
// a connection: one it accepted and dropped, for instance because it was
// killed, before any of the request was written is one the daemon never
// read a request from, as if it could not be reached.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// SentError means the request was sent, wholly or in part, and the
// connection broke before an answer came: the daemon may have received it
// and decided it, so its outcome is unknown.
type SentError struct {
	Where string
	// Method and Path name the request, e.g. GET /api/v1/whoami.
	Method, Path string
	Err          error
}

func (e *SentError) Error() string {
	cause := e.Err
	var ue *url.Error
	if errors.As(cause, &ue) {
		cause = ue.Err // Its URL repeats Where, Method and Path.
	}
	return fmt.Sprintf("the connection to reserved at %s broke after %s %s was sent, so it may have arrived (%v)", e.Where, e.Method, e.Path, cause)
}

func (e *SentError) Unwrap() error { return e.Err }

// rateLimitedSends bounds how often one call sends its request while the
// daemon answers it 429 rate_limited.
const rateLimitedSends = 5

// exchange sends one request as Do does. An answer 429 rate_limited
// decided nothing, and says when the caller's requests are accepted again:
// the same request, under the same Idempotency-Key, is sent again after
// its Retry-After (at least a second), up to rateLimitedSends sends in
// all. When ctx would end before the wait is over, or a Retry-After is
// longer than MaxRetryAfter, the rate_limited answer is returned at once,
// undecided for Classify, with its RetryAfter: the caller keeps the key
// and retries later.
func (c *Client) exchange(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, []byte, error) {
	for sent := 1; ; sent++ {
		resp, data, err := c.Do(ctx, method, path, header, body)
		if err != nil || sent == rateLimitedSends || !rateLimited(resp, data) {
			return resp, data, err
		}
		wait := retryAfter(resp.Header.Get("Retry-After"))
		if wait >= MaxRetryAfter {
			return resp, data, nil
		}
		wait = max(wait, time.Second)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return resp, data, nil
		}
		sleep := c.wait
		if sleep == nil {
			sleep = Sleep
		}
		if sleep(ctx, wait) != nil {
			return resp, data, nil
		}
	}
}

// rateLimited reports whether an answer is the problem rate_limited.
func rateLimited(resp *http.Response, body []byte) bool {
	if resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	p := Classify(Operation{}, replyOf(resp, body)).Problem
	return p != nil && p.Code == api.CodeRateLimited
}

// Sleep waits d, or until ctx is done and returns its error: the wait
// before a request is sent again after its answer's Retry-After, here and
// in the bench.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answerError turns a non-success answer into *engine.Error (a problem with
// a code) or *UnexpectedResponseError.
func answerError(resp *http.Response, body []byte) error {
	return Classify(Operation{}, replyOf(resp, body)).Err()
}

// call sends in (if non-nil) as JSON and decodes a JSON answer of one of the
// wanted statuses into out, returning the status. An answer rate_limited
// is sent again after its Retry-After (exchange).
func (c *Client) call(ctx context.Context, method, path string, header http.Header, in, out any, want ...int) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
	}
	resp, data, err := c.exchange(ctx, method, path, header, body)
	if err != nil {
		return 0, err
	}
	for _, w := range want {
		if resp.StatusCode != w {
			continue
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				return resp.StatusCode, &UnexpectedResponseError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}
			}
		}
		return resp.StatusCode, nil
	}
	return resp.StatusCode, answerError(resp, data)
}

// Health checks GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	resp, data, err := c.Do(ctx, http.MethodGet, api.PathHealth, nil, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return answerError(resp, data)
	}
	return nil
}

// WhoAmI returns the caller as the daemon sees it.
func (c *Client) WhoAmI(ctx context.Context) (engine.Principal, error) {
	var p engine.Principal
	_, err := c.call(ctx, http.MethodGet, api.PathWhoAmI, nil, nil, &p, http.StatusOK)
	return p, err
}

// Workshops lists the listed workshops, and the hidden ones too when
// withHidden is set.
func (c *Client) Workshops(ctx context.Context, withHidden bool) ([]engine.Workshop, error) {
	var l api.WorkshopList
	path := api.PathWorkshops
	if withHidden {
		path += "?include_hidden=true"
	}
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &l, http.StatusOK)
	return l.Workshops, err
}

// Workshop returns one workshop.
func (c *Client) Workshop(ctx context.Context, id string) (engine.Workshop, error) {
	var w engine.Workshop
	_, err := c.call(ctx, http.MethodGet, api.WorkshopPath(id), nil, nil, &w, http.StatusOK)
	return w, err
}

// PutWorkshop creates or updates a workshop (admin only) and reports whether
// it was created. A non-nil ifMatch requires that version.
func (c *Client) PutWorkshop(ctx context.Context, id string, spec engine.WorkshopSpec, ifMatch *uint64) (engine.Workshop, bool, error) {
	var w engine.Workshop
	status, err := c.call(ctx, http.MethodPut, api.WorkshopPath(id), ifMatchHeader(ifMatch), spec, &w, http.StatusCreated, http.StatusOK)
	return w, status == http.StatusCreated, err
}

// Send sends op idempotently under key and classifies the answer
// (Classify): POST /reservations for a reserve, POST
// /reservations/{id}/cancel for a cancel (with no body), POST /holds for a
// hold, POST /holds/{id}/confirm and /release for a confirm and a release,
// POST /waitlist/{id}/leave for leaving a waiting list and POST
// /admin/deliveries/{id}/retry and /skip for an operator's correction of
// a delivery (each with the body {}). The error is for no answer at all: the daemon
// unreachable (*ConnectError), the connection broken, a timeout. An answer
// 429 rate_limited is sent again, under the same key, after its
// Retry-After while ctx allows (exchange); the last one stays undecided.
func (c *Client) Send(ctx context.Context, key engine.OperationKey, op Operation) (Result, error) {
	path, payload, err := op.route()
	if err != nil {
		return Result{}, err
	}
	h := http.Header{api.HeaderIdempotencyKey: {string(key)}}
	resp, data, err := c.exchange(ctx, http.MethodPost, path, h, payload)
	if err != nil {
		return Result{}, err
	}
	return Classify(op, replyOf(resp, data)), nil
}

// emptyObject is the body of a confirmation, a release, leaving a waiting
// list and a correction of a delivery.
var emptyObject = []byte("{}")

// route returns the path and the body that send op.
func (op Operation) route() (string, []byte, error) {
	var v any
	path := api.PathReservations
	switch op.Kind {
	case engine.OperationCancel:
		return api.CancelPath(op.ReservationID), nil, nil
	case engine.OperationConfirm:
		return api.ConfirmPath(op.HoldID), emptyObject, nil
	case engine.OperationRelease:
		return api.ReleasePath(op.HoldID), emptyObject, nil
	case engine.OperationRetryDelivery:
		return api.DeliveryRetryPath(op.DeliveryID), emptyObject, nil
	case engine.OperationSkipDelivery:
		return api.DeliverySkipPath(op.DeliveryID), emptyObject, nil
	case engine.OperationLeaveWaitlist:
		return api.WaitlistLeavePath(op.EntryID), emptyObject, nil
	case engine.OperationHold:
		path, v = api.PathHolds, engine.HoldRequest{Workshop: op.Request.Workshop, Quantity: op.Request.Quantity, TTLSeconds: op.TTLSeconds}
	default:
		v = op.Request
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("%s: encode: %w", op.Kind, err)
	}
	return path, payload, nil
}

// replyOf is the Reply of resp with its whole body.
func replyOf(resp *http.Response, body []byte) Reply {
	return Reply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Replayed: resp.Header.Get(api.HeaderReplayed) == "true", Body: body,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
}

// Reserve sends the reservation req under key (Send) and returns the
// answer's status and exact body, whether it was replayed from the receipt,
// and Result.Err: nil for the authoritative answer (201 reserved, 409
// unavailable, and with req.Waitlist 202 waiting: the request joined the
// workshop's waiting list), an *engine.Error for a problem, an
// *UnexpectedResponseError for any other answer; or the error of no
// answer at all.
func (c *Client) Reserve(ctx context.Context, key engine.OperationKey, req engine.Request) (status int, body []byte, replayed bool, err error) {
	return unpack(c.Send(ctx, key, Reserving(req)))
}

// Cancel sends the cancellation of reservation id under key and returns as
// Reserve does; its authoritative answers are 200 cancelled and 409
// already_cancelled.
func (c *Client) Cancel(ctx context.Context, key engine.OperationKey, id string) (status int, body []byte, replayed bool, err error) {
	return unpack(c.Send(ctx, key, Cancelling(id)))
}

// LeaveWaitlist sends the leaving of waiting list entry id under key and
// returns as Reserve does; its authoritative answers are 200 left and 409
// expired, already_left and already_reserved.
func (c *Client) LeaveWaitlist(ctx context.Context, key engine.OperationKey, id string) (status int, body []byte, replayed bool, err error) {
	return unpack(c.Send(ctx, key, LeavingWaitlist(id)))
}

func unpack(r Result, err error) (int, []byte, bool, error) {
	if err != nil {
		return 0, nil, false, err
	}
	return r.Status, r.Body, r.Replayed, r.Err()
}

// Operation returns the caller's receipt for key.
func (c *Client) Operation(ctx context.Context, key engine.OperationKey) (api.OperationView, error) {
	var v api.OperationView
	_, err := c.call(ctx, http.MethodGet, api.OperationPath(key), nil, nil, &v, http.StatusOK)
	return v, err
}

// Reservation returns one reservation of the caller (any, for an admin).
func (c *Client) Reservation(ctx context.Context, id string) (engine.Reservation, error) {
	var r engine.Reservation
	_, err := c.call(ctx, http.MethodGet, api.ReservationPath(id), nil, nil, &r, http.StatusOK)
	return r, err
}

// Hold returns one hold of the caller (any, for an admin) with its state
// as of now.
func (c *Client) Hold(ctx context.Context, id string) (engine.Hold, error) {
	var h engine.Hold
	_, err := c.call(ctx, http.MethodGet, api.HoldPath(id), nil, nil, &h, http.StatusOK)
	return h, err
}

// CreateToken creates an API token for actor (admin only) that never
// expires and returns it.
func (c *Client) CreateToken(ctx context.Context, actor string, admin bool) (string, error) {
	t, err := c.IssueToken(ctx, api.TokenRequest{Actor: actor, Admin: admin})
	return t.Token, err
}

// IssueToken creates an API token as req asks (admin only) and returns the
// whole answer: the token, its id and its expiry.
func (c *Client) IssueToken(ctx context.Context, req api.TokenRequest) (api.TokenResponse, error) {
	var t api.TokenResponse
	_, err := c.call(ctx, http.MethodPost, api.PathTokens, nil, req, &t, http.StatusCreated)
	return t, err
}

// Tokens lists the API tokens (admin only).
func (c *Client) Tokens(ctx context.Context) ([]engine.TokenInfo, error) {
	var l api.TokenList
	_, err := c.call(ctx, http.MethodGet, api.PathTokens, nil, nil, &l, http.StatusOK)
	return l.Tokens, err
}

// RevokeToken revokes the API token id (admin only); an id that names no
// token, also one revoked already, is unknown_token.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	_, err := c.call(ctx, http.MethodDelete, api.TokenPath(id), nil, nil, nil, http.StatusNoContent)
	return err
}

// ArmFault arms an injected fault (admin only, daemon started with
// --enable-fault-injection).
func (c *Client) ArmFault(ctx context.Context, f api.Fault) error {
	_, err := c.call(ctx, http.MethodPost, api.PathFaults, nil, f, nil, http.StatusOK)
	return err
}
