package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/framing"
	"github.com/reserve/reserve/internal/tracing"
)

// requestInfo collects what the request log line and the metrics need; the
// handlers fill it in as they learn it.
type requestInfo struct {
	id      string // The request's id (requestID), also in X-Request-Id.
	route   string // The matched pattern, or "unmatched".
	actor   string
	opKey   string
	outcome string // Set by handlers that know better than the status.
	code    string // The error code of a problem answer.
	err     error  // The full error of a 5xx, for the log only.
	fault   string // An injected fault that shaped the answer.
}

type infoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if i, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{}
}

// outcomeOf classifies an answer for logs and metrics.
func (i *requestInfo) outcomeOf(status int) string {
	switch {
	case i.outcome != "":
		return i.outcome
	case status >= 500:
		return engine.OutcomeError
	case i.code == engine.CodeOperationConflict:
		return engine.OutcomeConflict
	case status >= 400:
		return engine.OutcomeRejected
	}
	return engine.OutcomeOK
}

// statusWriter remembers the status an answer was sent with. An answer
// that goes out before its request's body was read to its end says
// "Connection: close", and the connection reads at most drainGrace longer:
// net/http reads the rest of a small body before it closes the
// connection, up to the read timeout, and a client that announces a body
// and never sends it would hold the connection busy, where the connection
// cap cannot close it, although its answer was decided at once. The grace
// lets the rest of a body already on its way arrive, so that the
// connection ends with a clean close; ending the reads at once would close
// it with unread bytes, which makes the kernel reset it and can destroy
// the answer before the client has read it.
type statusWriter struct {
	http.ResponseWriter
	status int
	body   *bodyReader // Nil for a request without a body.
}

func (w *statusWriter) WriteHeader(status int) {
	w.sent(status)
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.sent(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// sent records the status of the answer's first write.
func (w *statusWriter) sent(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if w.body != nil && !w.body.done() {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(drainGrace))
	}
}

// drainGrace is how long a connection may go on sending the body of a
// request that was answered without it.
const drainGrace = 2 * time.Second

// bodyReader follows how much of a request body the handler has read.
type bodyReader struct {
	io.ReadCloser
	length int64 // The announced length, -1 for a chunked body.
	read   int64
	eof    bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// done reports whether the whole body has been read.
func (b *bodyReader) done() bool { return b.eof || (b.length >= 0 && b.read >= b.length) }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestID is the id of request r: the X-Request-Id it carries when
// that is valid (api.ValidRequestID), so that a caller, a proxy or a load
// balancer can follow its own id into this log, else a new random one of
// 16 hex digits. An id that is not valid is never logged: it could be
// anything, such as a line break that forges a log line.
func requestID(r *http.Request) string {
	if id := r.Header.Get(api.HeaderRequestID); api.ValidRequestID(id) {
		return id
	}
	return fmt.Sprintf("%016x", rand.Uint64())
}

// instrument gives every request its id (requestID), sent back in the
// answer's X-Request-Id, logs one line per API request and feeds the
// metrics of every request. It never logs other headers, so tokens and
// cookies cannot leak into the log. It also turns a panic into a 500
// problem.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: requestID(r), route: "unmatched"}
		w.Header().Set(api.HeaderRequestID, info.id)
		ctx := r.Context()
		var span tracing.Span
		if s.tracer != nil {
			ctx, span = s.tracer.Request(r, w.Header())
		}
		r = r.WithContext(context.WithValue(ctx, infoKey{}, info))
		sw := &statusWriter{ResponseWriter: w}
		if r.ContentLength != 0 {
			sw.body = &bodyReader{ReadCloser: r.Body, length: r.ContentLength}
			r.Body = sw.body
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				info.err = fmt.Errorf("panic: %v", p)
				if sw.status == 0 {
					writeProblem(sw, http.StatusInternalServerError, engine.CodeInternal, engine.ErrorMessage(info.err))
				}
			}
			elapsed := time.Since(start)
			outcome := info.outcomeOf(sw.status)
			s.metrics.observe(info.route, outcome, elapsed)
			span.EndRequest(info.route, sw.status, info.actor)
			if !strings.HasPrefix(r.URL.Path, "/api/") {
				return
			}
			attrs := []slog.Attr{
				slog.String("request_id", info.id),
				slog.String("method", r.Method),
				slog.String("route", info.route),
				slog.String("actor", info.actor),
				slog.String("operation", info.opKey),
				slog.String("outcome", outcome),
				slog.Int("status", sw.status),
				slog.Duration("duration", elapsed), // Logged as duration_ms (internal/logs).
			}
			level := slog.LevelInfo
			if info.code != "" {
				attrs = append(attrs, slog.String("code", info.code))
			}
			if info.fault != "" {
				attrs = append(attrs, slog.String("fault", info.fault))
			}
			if info.err != nil {
				level = slog.LevelError
				attrs = append(attrs, slog.String("error", info.err.Error()))
			}
			s.log.LogAttrs(r.Context(), level, "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// checkFraming refuses, before anything else sees it, a request whose
// length is framed ambiguously (Content-Length with Transfer-Encoding,
// Transfer-Encoding in HTTP/1.0, either folded onto a second line), one
// after a malformed body on the same connection, and one whose header block
// exceeds MaxHeaderBytes; net/http accepts all of them. A message framed
// two ways can be read as two different requests, so the answer closes the
// connection, as RFC 9112 section 6.1 requires, and nothing after it on the
// connection is read as a request.
func checkFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fc := connOf(r.Context()).framing
		err := errors.New("the request did not come through a followed connection")
		if fc != nil {
			err = fc.Take(r.Method, r.RequestURI, r.Proto)
		}
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		var fe *framing.Error
		switch {
		case errors.As(err, &fe) && fe.Kind == framing.ErrBadFraming:
			fail(w, r, engine.Errorf(api.CodeBadFraming, "%s (nothing was decided)", fe.Reason))
		case errors.Is(err, framing.ErrHeaderTooLarge):
			// The answer net/http gives to a header block it refuses
			// itself, so that every one gets the same.
			http.Error(w, "431 Request Header Fields Too Large", http.StatusRequestHeaderFieldsTooLarge)
		default:
			fail(w, r, fmt.Errorf("follow the request framing: %w", err))
		}
	})
}

// serverOptions answers "OPTIONS *", a question about the server as a
// whole rather than a resource, as net/http does: 200 with no body.
// The server passes the request on to its handler so that checkFraming
// sees every request.
func serverOptions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodOptions || r.RequestURI != "*" {
			next.ServeHTTP(w, r)
			return
		}
		// A body is not read: the answer closes the connection then (see
		// statusWriter), so a body sent slowly cannot hold it.
		w.Header().Set("Content-Length", "0")
	})
}

// refuseOrigin refuses every request on the Unix socket that carries an
// Origin header: only browsers send one, and a browser must never reach the
// socket's kernel-authenticated identity (for example through a local proxy).
func refuseOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			fail(w, r, engine.Errorf(engine.CodeForbidden, "requests with an Origin header are refused on the Unix socket; browsers use the TCP listener"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost protects TCP listeners on loopback addresses against DNS
// rebinding (LoopbackHosts); requests to other listeners pass.
func (s *Server) checkHost(next http.Handler) http.Handler {
	guarded := s.LoopbackHosts(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if connOf(r.Context()).loopback {
			guarded.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHosts protects a listener on a loopback address against DNS
// rebinding: a web page whose host name is made to resolve to 127.0.0.1
// reaches the listener with its own name in Host, so a request is refused
// with 403 forbidden unless its Host names a loopback host or one of the
// allowed names (Config.AllowedHosts). The API's TCP listeners on loopback
// and the daemon's pprof listener apply it.
func (s *Server) LoopbackHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			fail(w, r, engine.Errorf(engine.CodeForbidden, "Host %q is not allowed on this loopback listener (start reserved with --allowed-host to add it)", engine.Truncate(r.Host, 80)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || s.allowedHosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
