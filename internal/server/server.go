package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/connlimit"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/framing"
	"github.com/reserve/reserve/internal/tracing"
)

// Limits of every listener. MaxHeaderBytes bounds a request's header
// block: its request line and header fields with their line ends.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	// WriteTimeout bounds how long an answer may take to be written. Answers
	// are small, so only a client that does not read them reaches it (one
	// that sends requests and never reads the answers would otherwise hold
	// a connection the cap cannot close); a backup extends it while its
	// client reads, a held delay_response fault while it holds.
	WriteTimeout   = time.Minute
	IdleTimeout    = 2 * time.Minute
	MaxHeaderBytes = 16 << 10
)

// netHTTPHeaderSlack is what net/http adds to http.Server.MaxHeaderBytes
// before it refuses a header block with 431 (its "bufio slop").
const netHTTPHeaderSlack = 4096

// Config configures a Server.
type Config struct {
	// Engine makes every decision. Required.
	Engine *engine.Engine
	// Logger gets one line per API request. Nil discards.
	Logger *slog.Logger
	// Metrics are served on /metrics. Nil creates a fresh set.
	Metrics *Metrics
	// Tracer gives each request a span (tracing.SpanRequest) that
	// continues the trace of its W3C traceparent, and sends traceparent
	// back. Nil is tracing off: no span and no header.
	Tracer *tracing.Tracer
	// DaemonUID is the uid whose socket peers are admins besides root.
	DaemonUID int
	// AdminGIDs are groups whose members are admins on the socket
	// (InAdminGroup). Nil means none.
	AdminGIDs []uint32
	// LookupUsername names a socket peer's uid the first time it is seen,
	// for the actor it is bound to (SocketActorName); it reports a uid
	// without a name with user.UnknownUserIdError. Nil means the system's
	// user database (os/user).
	LookupUsername func(uid uint32) (string, error)
	// AllowedHosts adds Host names accepted on loopback TCP listeners.
	AllowedHosts []string
	// Faults, if set, is the fault injection of a daemon started with
	// --enable-fault-injection: POST /api/v1/debug/faults arms it, and its
	// Answers middleware shapes every answer. Nil means none.
	Faults Faults
	// Backup, if set, streams a consistent snapshot of the store for GET
	// /api/v1/admin/backup; nil answers that route not_implemented.
	Backup Backup
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's header. Zero means the default ReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds how long an answer may take to be written. Zero
	// means the default WriteTimeout.
	WriteTimeout time.Duration
	// LoginBaseURL is the base of the browser login links, e.g.
	// http://127.0.0.1:8080. Empty means the first TCP listener's address.
	LoginBaseURL string
	// MaxSocketConns and MaxTCPConns bound the connections each Unix
	// socket listener and each TCP listener holds at a time; at the bound
	// the longest idle connection is closed to admit a new one, and with
	// none idle the new one is closed. Zero means no bound.
	MaxSocketConns, MaxTCPConns int

	// OIDC, if set, offers sign-in through an OpenID Connect provider to
	// the browser form. Nil means none.
	OIDC *OIDCConfig
	// EmailSignIn, if set and enabled, mails sign-in links to people
	// (POST /api/v1/sign-in/email). Nil offers no sign-in by email.
	EmailSignIn *EmailSignIn
	// RateLimit limits the API requests of every actor that is not an
	// admin. The zero RateLimit limits nothing.
	RateLimit RateLimit
}

// Server serves API v1 on a Unix socket listener and any number of TCP
// listeners.
type Server struct {
	eng            *engine.Engine
	log            *slog.Logger
	metrics        *Metrics
	tracer         *tracing.Tracer
	daemonUID      int
	adminGIDs      []uint32
	lookupUsername func(uid uint32) (string, error)
	allowedHosts   map[string]bool
	faultInjection Faults
	backupFn       Backup
	mux            http.Handler
	headerTimeout  time.Duration
	writeTimeout   time.Duration
	loginBase      string
	maxSocketConns int
	maxTCPConns    int
	emailSignIn    *emailSignIn // Nil: no sign-in by email.
	limits         *rateLimits  // Nil: no rate limit.

	oidc     *oidcSignIn // Nil without a provider.
	profiles *profiles

	capMu  sync.Mutex
	capLog map[string]capLogged // By listener kind and action.

	mu      sync.Mutex
	tcpBase string // The base URL of the first TCP listener.
	servers []*http.Server
	stopped bool
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		eng:            cfg.Engine,
		log:            cfg.Logger,
		metrics:        cfg.Metrics,
		tracer:         cfg.Tracer,
		daemonUID:      cfg.DaemonUID,
		adminGIDs:      cfg.AdminGIDs,
		lookupUsername: cfg.LookupUsername,
		allowedHosts:   map[string]bool{},
		faultInjection: cfg.Faults,
		backupFn:       cfg.Backup,
		capLog:         map[string]capLogged{},
		headerTimeout:  cfg.ReadHeaderTimeout,
		writeTimeout:   cfg.WriteTimeout,
		loginBase:      strings.TrimSuffix(cfg.LoginBaseURL, "/"),
		maxSocketConns: cfg.MaxSocketConns,
		maxTCPConns:    cfg.MaxTCPConns,
		emailSignIn:    newEmailSignIn(cfg.EmailSignIn),
		limits:         newRateLimits(cfg.RateLimit),
	}
	s.profiles = newProfiles(time.Now)
	if cfg.OIDC != nil {
		s.oidc = newOIDCSignIn(*cfg.OIDC, time.Now)
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = WriteTimeout
	}
	if s.headerTimeout <= 0 {
		s.headerTimeout = ReadHeaderTimeout
	}
	if s.lookupUsername == nil {
		s.lookupUsername = lookupUsername
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	for _, h := range cfg.AllowedHosts {
		s.allowedHosts[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	s.mux = s.newMux()
	if s.faultInjection != nil {
		s.mux = s.faultInjection.Answers(s.mux)
	}
	return s
}

// ServeUnix serves the API on a Unix socket listener, identifying callers by
// their peer credentials. It returns nil after Shutdown.
func (s *Server) ServeUnix(ln net.Listener) error {
	return s.serve(peerListener{Listener: ln, s: s}, listenerSocket, s.maxSocketConns, socketOwner, refuseOrigin(s.mux), s.socketConnContext)
}

// SocketSlots divides the Unix socket's cap of max connections: reserved
// slots that only admins (SocketAdmin) may take, an eighth of max rounded
// up but at most max-1, and the share of every other uid, a quarter of the
// slots not reserved, rounded up. A connection counts against its uid from
// its acceptance to its close, also while its answers are not being read,
// so neither one uid nor all other uids together can lock the admins out,
// and one uid cannot lock the others out.
func SocketSlots(max int) (reserved, share int) {
	reserved = min((max+7)/8, max-1)
	return reserved, (max - reserved + 3) / 4
}

// ServeTCP serves the API and the browser form on a TCP listener,
// identifying callers by bearer token or browser session. On a loopback
// address only loopback Host headers (and the allowed hosts) are accepted;
// unsafe requests from another origin are refused. It returns nil after
// Shutdown.
func (s *Server) ServeTCP(ln net.Listener) error {
	loopback := false
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		loopback = a.IP.IsLoopback()
	}
	s.mu.Lock()
	if s.tcpBase == "" {
		s.tcpBase = BaseURL(ln.Addr().String())
	}
	s.mu.Unlock()
	return s.serve(ln, listenerTCP, s.maxTCPConns, nil, browserHeaders(s.checkHost(crossOriginProtection(s.mux))), tcpConnContext(loopback))
}

// The names of the listener kinds in logs and metrics.
const (
	listenerSocket = "socket"
	listenerTCP    = "tcp"
)

// serve serves h on ln, a listener of the given kind, holding at most
// maxConns connections (zero: no bound); with owner set, its connections
// are counted by owner, with SocketSlots. Every request's framing is
// checked before h sees it.
func (s *Server) serve(ln net.Listener, kind string, maxConns int, owner func(net.Conn) connlimit.Owner, h http.Handler, connContext func(context.Context, net.Conn) context.Context) error {
	srv := &http.Server{
		Handler:           s.instrument(checkFraming(serverOptions(h))),
		ReadHeaderTimeout: s.headerTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      s.writeTimeout,
		IdleTimeout:       IdleTimeout,
		// net/http reads MaxHeaderBytes plus its slack; the followed
		// framing holds every header block to MaxHeaderBytes exactly,
		// also one that arrived pipelined behind another.
		MaxHeaderBytes: MaxHeaderBytes - netHTTPHeaderSlack,
		ConnContext:    connContext,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Every request must reach checkFraming, "OPTIONS *" too;
		// serverOptions answers that one.
		DisableGeneralOptionsHandler: true,
	}
	ln = &framing.Listener{Listener: ln, MaxHeaderBytes: MaxHeaderBytes}
	if maxConns > 0 {
		opts := connlimit.Options{
			OnShed:        func() { s.atConnCap(kind, maxConns, actionShed) },
			OnShedWaiting: func() { s.atConnCap(kind, maxConns, actionShedWaiting) },
			Owner:         owner,
		}
		if owner != nil {
			opts.Reserved, opts.Share = SocketSlots(maxConns)
		}
		opts.OnRefuse = func(c net.Conn, why connlimit.Refusal) {
			var uid string
			var attrs []any
			if why == connlimit.RefusedShare {
				uid = owner(c).Key
				attrs = []any{"uid", uid}
			}
			s.atConnCap(kind, maxConns, refusalActions[why], attrs...)
			if stopReading(c) {
				c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
				c.Write(refusalAnswer(kind, maxConns, opts.Reserved, opts.Share, why, uid))
			}
		}
		limited := connlimit.New(ln, maxConns, opts)
		srv.ConnState = limited.ConnState
		s.metrics.trackConnections(kind, limited.Open, limited.Idle, limited.Waiting)
		ln = limited
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// What a listener at its connection cap did, in logs and metrics.
const (
	actionShed        = "shed_idle"    // Closed the longest idle connection to admit a new one.
	actionShedWaiting = "shed_waiting" // With none idle, closed the one waiting longest for its first request header.
	actionRefused     = "refused_new"  // Closed a new connection because every one was busy with a request.
	// Closed a new socket connection of a uid that is not an admin
	// because those uids held every slot not kept for admins, each busy.
	actionRefusedUnreserved = "refused_unreserved"
	// Closed a new socket connection because its uid held its whole
	// share, each busy with a request.
	actionRefusedShare = "refused_share"
)

// refusalActions are the actions of the refusals.
var refusalActions = map[connlimit.Refusal]string{
	connlimit.RefusedBusy:       actionRefused,
	connlimit.RefusedUnreserved: actionRefusedUnreserved,
	connlimit.RefusedShare:      actionRefusedShare,
}

// refusalWriteTimeout bounds the write of the answer to a connection
// refused at the cap. The connection is fresh, so its small answer fits
// the socket's buffer at once; the bound only keeps a kernel that thinks
// otherwise from stalling the accept loop.
const refusalWriteTimeout = 100 * time.Millisecond

// refusalAnswer is the answer written to a connection refused at the cap
// of a listener of kind, before it is closed, when the client's request
// has arrived (stopReading): a 503 too_many_connections problem that
// says why and that no request was read, so that the client knows that
// nothing was done and can retry (after Retry-After), instead of seeing a
// connection that broke after it sent its request. A client that has sent
// nothing yet gets no answer: writing to the closed connection fails, so
// it learns that nothing was sent. uid names the owner of a connection
// refused for its share.
func refusalAnswer(kind string, maxConns, reserved, share int, why connlimit.Refusal, uid string) []byte {
	var reason string
	switch why {
	case connlimit.RefusedShare:
		reason = fmt.Sprintf("uid %s holds its share of %d %s connections, each busy with a request (one whose answers are not being read is busy)", uid, share, kind)
	case connlimit.RefusedUnreserved:
		reason = fmt.Sprintf("the %d %s connections not kept for admins are all held, each busy with a request", maxConns-reserved, kind)
	default:
		reason = fmt.Sprintf("all %d %s connections are held, each busy with a request", maxConns, kind)
	}
	body := append(problemJSON(http.StatusServiceUnavailable, api.CodeTooManyConnections,
		reason+": reserved closed this connection without reading a request from it, so nothing was done; retry"), '\n')
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: %s\r\nCache-Control: no-store\r\nRetry-After: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		api.MediaProblem, connRetryAfter, len(body), body)
}

// connRetryAfter is the Retry-After of a too_many_connections answer, in
// seconds: busy connections end within the write timeout at the latest,
// most of them much sooner.
const connRetryAfter = "1"

// capLogEvery is how often at most the log says, per listener kind and
// action, that a listener is at its connection cap, and that the rate
// limit refused requests.
const capLogEvery = time.Minute

// capLogged is when the log last said so, and how often it happened since.
type capLogged struct {
	at     time.Time
	closed int
}

// logNow counts one more event of key and reports whether the log should
// say so now, the first time and then at most once a minute, with how
// many events there were since it last did.
func (s *Server) logNow(key string) (events int, now bool) {
	s.capMu.Lock()
	defer s.capMu.Unlock()
	l := s.capLog[key]
	l.closed++
	t := time.Now()
	if !l.at.IsZero() && t.Sub(l.at) < capLogEvery {
		s.capLog[key] = l
		return 0, false
	}
	s.capLog[key] = capLogged{at: t}
	return l.closed, true
}

// atRateLimit says in the log, at most once a minute, that the rate limit
// refused requests, with how many since and the refusal err of the last.
func (s *Server) atRateLimit(err error) {
	if n, now := s.logNow("rate limit"); now {
		s.log.Warn("the rate limit refused requests (--rate-limit, --rate-burst): they were not decided, and their clients send them again after Retry-After",
			"refused", n, "last", engine.ErrorMessage(err))
	}
}

// atConnCap counts what a listener at its cap of maxConns connections did,
// and says so in the log, at most once a minute per listener kind and
// action, with the number of connections closed since and the attributes
// attrs of the last one.
func (s *Server) atConnCap(kind string, maxConns int, action string, attrs ...any) {
	s.metrics.connCap.WithLabelValues(kind, action).Inc()
	closed, now := s.logNow(kind + " " + action)
	if !now {
		return
	}
	attrs = append([]any{"listener", kind, "max_connections", maxConns, "closed", closed}, attrs...)
	switch action {
	case actionShed:
		s.log.Info("a listener at its connection cap closed idle connections to admit new ones", attrs...)
	case actionShedWaiting:
		s.log.Warn("a listener at its connection cap closed connections that had not sent a whole request header to admit new ones: none of its connections was idle", attrs...)
	case actionRefusedUnreserved:
		s.log.Warn("a listener closed new connections of users who are not admins at once: their connections held every slot not kept for admins, each busy with a request", attrs...)
	case actionRefusedShare:
		s.log.Warn("a listener closed new connections of a user at once: that user held its whole share of connections, each busy with a request", attrs...)
	default:
		s.log.Warn("a listener at its connection cap closed new connections at once: every one of its connections was busy with a request", attrs...)
	}
}

// Shutdown stops accepting connections, releases answers held by a
// delay_response fault, and waits for requests in flight until ctx ends;
// then it closes the remaining connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		if s.faultInjection != nil {
			s.faultInjection.Release()
		}
	}
	servers := s.servers
	s.mu.Unlock()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
