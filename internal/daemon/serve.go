package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/faults"
	"github.com/reserve/reserve/internal/flagconfig"
	"github.com/reserve/reserve/internal/logs"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/tracing"
	"github.com/reserve/reserve/internal/version"
)

// The demo workshop a new database gets unless --no-demo.
const (
	DemoWorkshop    = "workshop-demo"
	demoTitle       = "Demo workshop"
	demoCapacity    = 3
	demoMaxQuantity = 2
)

// clearTextWarning is logged at start when the TCP listener is on an
// address that is not loopback: it serves plain HTTP, and browsers treat
// only https and loopback origins as secure contexts, the only ones in
// which they run the form and send the Fetch metadata its sign-in needs.
const clearTextWarning = "the TCP listener is not on a loopback address: bearer tokens, login links and browser sessions cross the network there in clear text, and browsers run the form and its sign-in only in a secure context (https or loopback); put a TLS proxy in front of it"

// EnvListen overrides the default TCP address; set but empty disables TCP.
const EnvListen = "RESERVED_LISTEN"

// serveOptions are the flags of `reserved serve`, also accepted by the bare
// `reserved`.
type serveOptions struct {
	store           storeFlags
	notify          notifyFlags
	retention       retentionFlags
	oidc            oidcFlags
	mail            mailFlags
	delivery        deliveryFlags
	listen          string
	socket          string
	socketMode      string
	noDemo          bool
	faultInjection  bool
	logFormat       string
	logLevel        string
	allowedHosts    []string
	shutdownTimeout time.Duration
	noGroupCommit   bool
	headerTimeout   time.Duration
	writeTimeout    time.Duration
	pprofListen     string
	gcPercent       int
	committerNice   int
	acceptRollback  bool
	maxTCPConns     int
	adminGroup      string
	maxSocketConns  int
	rateLimit       float64
	otlpEndpoint    string
	traceRatio      float64
	tracer          *tracing.Tracer // Set by serve from otlpEndpoint; nil is tracing off.
	rateBurst       int
	// Whether the caps were given, rather than defaults that may be
	// lowered to fit the open file limit.
	maxTCPGiven, maxSocketGiven bool
	// config is the configuration file, and configured says what was
	// taken from it and from the environment.
	config     string
	configured flagconfig.Result
}

// The defaults of --rate-limit and --rate-burst, per actor that is not an
// admin. A person's busiest moment stays far below them: the page sends
// about five requests when it loads and after each answer, a double click
// sends one request (the page locks while it sends), and the page and
// reservectl send an undecided request again only after its Retry-After;
// a person with ten tabs open that each read their lists every few
// seconds sends a few a second. The burst takes a whole rush at once, an
// integration that forwards a room's registrations under one actor
// included. Imports and benches run as admins, who are not limited, and
// an import's batch of up to 1,000 rows is one request. What the limit
// stops is one caller's loop gone wrong, a script or a client that sends
// without pause, which at thousands of requests a second would take the
// daemon from everyone else. Requests without credentials get ten times
// these per client address (server.AddressShare): a venue's network
// behind one address, or the TLS proxy in front of the daemon, signs
// everyone in.
const (
	defaultRateLimit = 50
	defaultRateBurst = 100
)

// defaultGCPercent is the daemon's garbage collector target. Its live heap
// is small and its garbage is short-lived, so under load Go's default of
// 100 (collect when the heap has doubled) collects many times a second;
// 400 lets it grow to five times the live heap between collections, which
// costs a few MiB and gives the CPU back to requests (docs/benchmarks.md
// has the measurements).
const defaultGCPercent = 400

// defaultCommitterNice is the nice value the bolt store's group committer
// asks for. Every reservation waits for the committer, and it spends most
// of each commit in fdatasync; at the daemon's own priority it would queue
// behind request handlers for a CPU whenever a sync completed, so it runs
// first (docs/benchmarks.md has the measurements). It only ever wants a
// CPU briefly, so the handlers lose little.
const defaultCommitterNice = -10

func (o *serveOptions) register(cmd *cobra.Command) {
	listen := "127.0.0.1:8080"
	if v, ok := os.LookupEnv(EnvListen); ok {
		listen = v
	}
	f := cmd.Flags()
	o.store.register(f)
	o.notify.register(f)
	o.oidc.register(f)
	o.retention.register(f)
	o.mail.register(f)
	o.delivery.register(f)
	f.StringVar(&o.listen, "listen", listen, "TCP address for bearer-token clients; empty disables TCP (env "+EnvListen+")")
	f.StringVar(&o.socket, "socket", paths.Socket(), "Unix socket for local clients, identified by their uid (env "+paths.EnvSocket+")")
	f.StringVar(&o.socketMode, "socket-mode", "0600", "permissions of the Unix socket, in octal, which it has from the moment it is created, e.g. --socket-mode 0660 to let its group in")
	f.BoolVar(&o.noDemo, "no-demo", false, "do not create the demo workshop in a new database")
	f.BoolVar(&o.faultInjection, "enable-fault-injection", false, "enable POST /api/v1/debug/faults (tests only)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "the least level of the lines logged: debug, info (every API request), warn or error; durations are in milliseconds, as <name>_ms")
	f.StringSliceVar(&o.allowedHosts, "allowed-host", nil, "extra Host name accepted on a loopback TCP listener (repeatable)")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long requests in flight may take after SIGINT/SIGTERM")
	f.BoolVar(&o.noGroupCommit, "no-group-commit", false, "commit every reservation on its own instead of sharing commits (for comparisons)")
	f.DurationVar(&o.headerTimeout, "read-header-timeout", server.ReadHeaderTimeout, "how long a client may take to send a request's header before the connection is closed")
	f.DurationVar(&o.writeTimeout, "write-timeout", server.WriteTimeout, "how long an answer may take to be written before the connection is closed, e.g. --write-timeout 30s; only a client that does not read its answers reaches it (a backup gets more time while its client reads)")
	f.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "garbage collector target: heap growth in percent between collections, as GOGC; -1 turns collection off (a non-empty GOGC in the environment wins unless this flag is given, also by its variable or the configuration file)")
	f.IntVar(&o.committerNice, "committer-nice", defaultCommitterNice, "nice value (-20 to 19, lower runs sooner) of the bolt store's group committer thread on Linux; negative values need CAP_SYS_NICE (root has it) or a matching RLIMIT_NICE, without which it keeps the daemon's priority; 0 leaves it alone")
	f.BoolVar(&o.acceptRollback, "accept-rollback", false, "bolt: when one of the database's two meta pages is damaged, serve the older transaction the intact one records and lose the newest (its reservations, receipts and changes) instead of refusing to start; only when no backup can be restored, e.g. reserved serve --db reserved.db --accept-rollback")
	f.IntVar(&o.maxTCPConns, "max-tcp-connections", defaultMaxTCPConns, fmt.Sprintf("most connections the TCP listener holds at once, e.g. --max-tcp-connections 512; at the cap the one idle longest is closed to admit a new one, with none idle the one waiting longest for its first request header, and with every one busy with a request the new one; together with --max-socket-connections it must fit in the open file limit (RLIMIT_NOFILE) less %d files kept for the database and others, or the defaults are lowered to fit", fdReserve))
	f.IntVar(&o.maxSocketConns, "max-socket-connections", defaultMaxSocketConns, "most connections the Unix socket holds at once, on top of TCP's, e.g. --max-socket-connections 64; at the cap as with --max-tcp-connections, except that an eighth of them are kept for admins (root, the daemon's user, --admin-group) and every other uid holds at most a quarter of the rest, its connections busy or not")
	f.StringVar(&o.adminGroup, "admin-group", "", "members of this group (by name or gid; the peer's primary or a supplementary group, as the kernel recorded them when it connected) are admins on the Unix socket, besides root and the daemon's own user, e.g. --admin-group reserve-admin")
	f.Float64Var(&o.rateLimit, "rate-limit", defaultRateLimit, "API requests a second that each actor that is not an admin may send on average, e.g. --rate-limit 20; more are answered 429 rate_limited with Retry-After, undecided, which clients send again after it; requests without credentials get ten times this per client address; 0 turns the limit off")
	f.IntVar(&o.rateBurst, "rate-burst", defaultRateBurst, "API requests each actor that is not an admin may send at once, beyond --rate-limit, e.g. --rate-burst 40; requests without credentials get ten times this per client address; 0 turns the limit off")
	f.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "send OpenTelemetry traces (a span for each HTTP request, engine decision and store commit) by OTLP/HTTP to this collector, e.g. --otlp-endpoint http://127.0.0.1:4318 (posted to /v1/traces); answers then carry the W3C traceparent of their request's span; empty turns tracing off")
	f.Float64Var(&o.traceRatio, "trace-sample-ratio", 1, "with --otlp-endpoint, the share (0 to 1) of the traces begun here that are recorded, e.g. --trace-sample-ratio 0.1; a request with a traceparent follows its caller's decision")
	f.StringVar(&o.pprofListen, "pprof-listen", "", "serve Go profiles (/debug/pprof/) without authentication on this loopback address, e.g. 127.0.0.1:6060 (for profiling only); other addresses are refused, Host headers are checked as on a loopback --listen (--allowed-host), and the command line (/debug/pprof/cmdline) is not served")
	f.StringVar(&o.config, "config", DefaultConfigFile, "read settings from this file, one a line as name = value, the name a flag's without its dashes (e.g. max-tcp-connections = 512); a flag given wins over its environment variable, which wins over the file; the default file is read only where it exists, --config '' reads none")
	flagconfig.Annotate(f, EnvPrefix)
}

func newServeCmd(stderr io.Writer) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API on a Unix socket and a TCP address (the default)",
		Long: `serve opens the database and serves the HTTP API until SIGINT or SIGTERM.

On the Unix socket the caller's uid is its identity (actor unix-<username>;
root, the daemon's own user and members of --admin-group are admins).

Under systemd it sends READY=1, STOPPING=1 and, with WATCHDOG_USEC, watchdog
pings while the store answers reads (Type=notify); listeners passed by socket
activation named "socket" and "tcp" replace --socket and --listen. On TCP every request needs an
Authorization: Bearer token, created by an admin with POST /api/v1/tokens.
A new database gets the demo workshop "workshop-demo" unless --no-demo.

A bolt database is created only where --db names no file. An existing file
that is empty, not a reserved database, or damaged is refused with exit
status 2 and left as it is. A database one of whose two meta pages is damaged
would open at the older transaction and lose the newest one: that is refused
too, unless --accept-rollback. A damaged page met while serving stops the
daemon with exit status 2 instead of serving from a damaged file.

Every flag can also be set by its environment variable, RESERVED_ and the
flag's name in upper case with '-' as '_' (each flag's help names it), or
in the configuration file --config names (by default ` + DefaultConfigFile + `,
read only where it exists): one setting a line, "name = value" with the
flag's name without its dashes, and '#' at the start of a comment line. A
flag given wins over its variable, the variable over the file, the file
over the default. An unknown setting or a bad value in either stops the
daemon with exit status 2 before it starts.`,
		Example: `  reserved serve
  reserved serve --db /var/lib/reserved/reserved.db --listen :8080 --log-format json
  reserved serve --listen '' --socket /run/reserved/reserved.sock --socket-mode 0660
  reserved serve --db /var/lib/reserved/reserved.db --accept-rollback   # lose the newest transaction of a damaged meta page
  reserved serve --max-tcp-connections 8192 --max-socket-connections 512   # needs an open file limit of 8832
  RESERVED_LOG_FORMAT=json reserved serve --config /etc/reserved/test.conf
  curl --unix-socket /tmp/reserved-$(id -u).sock http://local/api/v1/whoami`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd, stderr)
		},
	}
	opts.register(cmd)
	return cmd
}

// run gives the flags the command line did not set their values from the
// environment and the configuration file, checks them, sets the garbage
// collector target and serves; both `reserved` and `reserved serve` run
// it.
func (o *serveOptions) run(cmd *cobra.Command, stderr io.Writer) error {
	if err := o.configure(cmd); err != nil {
		return err
	}
	if o.gcPercent < -1 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--gc-percent must be at least 0, or -1 to turn collection off, not %d", o.gcPercent)}
	}
	if o.committerNice < -20 || o.committerNice > 19 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--committer-nice must be between -20 and 19, not %d", o.committerNice)}
	}
	if o.maxTCPConns < 1 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--max-tcp-connections must be at least 1, not %d", o.maxTCPConns)}
	}
	if o.maxSocketConns < 1 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--max-socket-connections must be at least 1, not %d", o.maxSocketConns)}
	}
	if o.rateLimit < 0 || math.IsNaN(o.rateLimit) || math.IsInf(o.rateLimit, 0) {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--rate-limit must be a number of requests a second, 0 or more (0 turns the limit off), not %v", o.rateLimit)}
	}
	if o.rateBurst < 0 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--rate-burst must be 0 or more (0 turns the limit off), not %d", o.rateBurst)}
	}
	if o.writeTimeout <= 0 {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--write-timeout must be positive, not %v", o.writeTimeout)}
	}
	if err := o.oidc.load(); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if o.pprofListen != "" {
		if err := checkPprofAddr(o.pprofListen); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
	}
	o.maxTCPGiven, o.maxSocketGiven = cmd.Flags().Changed("max-tcp-connections"), cmd.Flags().Changed("max-socket-connections")
	if os.Getenv("GOGC") == "" || cmd.Flags().Changed("gc-percent") {
		debug.SetGCPercent(o.gcPercent)
	}
	return serve(cmd.Context(), o, stderr)
}

// rateLimitOf is the rate limit in effect, for the start line: both 0
// when either flag turns it off.
func (o *serveOptions) rateLimitOf() (float64, int) {
	if o.rateBurst == 0 || o.rateLimit == 0 {
		return 0, 0
	}
	return o.rateLimit, o.rateBurst
}

// gcPercent returns the garbage collector target in effect, -1 when
// collection is off.
func gcPercent() int64 {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64()) // Off is reported as the largest uint64.
}

// serve runs the daemon until ctx ends or a signal arrives.
func serve(ctx context.Context, o *serveOptions, stderr io.Writer) error {
	logger, err := newLogger(o.logFormat, o.logLevel, stderr)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if c := o.configured; c.File != "" {
		logger.Info("read settings from the configuration file", "config", c.File, "settings", c.FromFile)
	}
	adminGIDs, err := o.adminGIDs()
	if err != nil {
		return err
	}
	if err := o.retention.check(); err != nil {
		return err
	}
	if err := o.delivery.check(); err != nil {
		return err
	}
	// Tracing is set up before anything is created, so that a bad
	// endpoint or ratio leaves nothing behind.
	tracer, stopTracing, err := tracing.Start(tracing.Config{Endpoint: o.otlpEndpoint, SampleRatio: o.traceRatio, Service: "reserved", Version: version.String()})
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	o.tracer = tracer
	if tracer != nil {
		logger.Info("sending traces by OTLP/HTTP", "otlp_endpoint", o.otlpEndpoint, "trace_sample_ratio", o.traceRatio)
	}
	defer func() {
		// Whatever is left is sent before the daemon exits, within
		// the same bound as the requests in flight.
		ctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
		defer cancel()
		if err := stopTracing(ctx); err != nil {
			logger.Warn("could not send the last spans", "error", err)
		}
	}()
	notifier, err := newServiceNotifier(logger)
	if err != nil {
		return err
	}
	caps, openFiles, limitWarning, err := o.connCaps()
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	lns, err := o.openListeners()
	if err != nil {
		return err
	}
	defer lns.close()
	metrics := server.NewMetrics()
	// Mail is checked before the store is opened, so that a refusal
	// creates nothing.
	mailer, err := o.mail.open(ctx, logger, metrics, lns.tcpAddr != "")
	if err != nil {
		return err
	}
	store, err := o.openStore(ctx, metrics, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	waker := delivery.NewWaker()
	eng, injector := o.newEngine(store, waker, logger)
	if err := o.createDemo(ctx, eng, store, logger); err != nil {
		return err
	}
	cfg := o.serverConfig(eng, store, injector, metrics, logger, adminGIDs, caps, lns.tcpAddr)
	if mailer != nil {
		cfg.EmailSignIn = mailer.signIn
		defer mailer.queue.Start(ctx)()
	}
	srv := server.New(cfg)
	if lns.pprof != nil {
		defer servePprof(lns.pprof, srv.LoopbackHosts, logger)()
	}
	mailDeliveries, err := mailer.deliveries(eng, o.oidc.publicURL)
	if err != nil {
		return err
	}
	stopBackground, err := o.startBackground(ctx, eng, waker, mailDeliveries, metrics, logger)
	if err != nil {
		return err
	}
	defer stopBackground()

	lns.serving = true
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeUnix(lns.sock) }()
	if lns.tcp != nil {
		go func() { errc <- srv.ServeTCP(lns.tcp) }()
	}
	if o.faultInjection {
		logger.Warn("fault injection is enabled: admins can make reservations fail or answers break via POST /api/v1/debug/faults; never use this in production")
	}
	if lns.tcpAddr != "" {
		logLoginLink(ctx, eng, logger, lns.tcpAddr)
		if a, ok := lns.tcp.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
			logger.Warn(clearTextWarning, "tcp", lns.tcpAddr)
		}
	}
	if limitWarning != nil {
		logger.Warn("the open file limit (RLIMIT_NOFILE) stays as it is; the connection caps fit in it", "error", limitWarning, "open_files", openFiles)
	}
	if caps.lowered {
		logger.Warn("the open file limit (RLIMIT_NOFILE) is too low for the default connection caps, so they are lowered to fit; raise the limit (ulimit -n, systemd LimitNOFILE=) or set --max-tcp-connections and --max-socket-connections", "open_files", openFiles, "kept_for_other_files", fdReserve, "max_tcp_connections", caps.tcp, "max_socket_connections", caps.socket)
	}
	// Both listeners accept (connections wait in their backlogs until
	// the servers take them) and the store is open.
	notifier.ready(eng)
	adminSlots, uidShare := server.SocketSlots(caps.socket)
	rateLimit, rateBurst := o.rateLimitOf()
	// This line comes last: whoever waits for it finds every start line.
	logger.Info("reserved is serving", "version", version.String(), "pid", os.Getpid(), "store", o.store.effectiveKind(), "db", store.String(), "socket", o.socket, "tcp", lns.tcpAddr, "socket_activated", lns.activated, "admin_group", o.adminGroup, "group_commit", store.groupCommit, "gc_percent", gcPercent(), "committer_nice", o.committerNiceOf(store, logger),
		"open_files", openFiles, "max_socket_connections", caps.socket, "socket_admin_slots", adminSlots, "socket_uid_share", uidShare, "max_tcp_connections", caps.tcp,
		"rate_limit", rateLimit, "rate_burst", rateBurst)

	var serveErr, damage error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", o.shutdownTimeout)
	case serveErr = <-errc:
		logger.Error("listener failed, shutting down", "error", serveErr)
	case <-store.damaged:
		damage = store.damage()
		logger.Error("the database is damaged: shutting down instead of serving from it; restore it from a backup", "error", damage)
	}
	stop()
	notifier.stopping()
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("requests were still in flight at the shutdown timeout", "error", err)
	}
	lns.sock.Close() // Removes the socket file.
	stopBackground()
	if err := store.Close(); err != nil {
		return err
	}
	if damage != nil {
		return &exitError{code: ExitUsage, err: damage}
	}
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	logger.Info("reserved stopped")
	return nil
}

// adminGIDs checks --socket-mode and returns the gid of --admin-group, if
// one is named.
func (o *serveOptions) adminGIDs() ([]uint32, error) {
	if mode, err := strconv.ParseUint(o.socketMode, 8, 32); err != nil || mode > 0o777 {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--socket-mode %q is not an octal permission such as 0600", o.socketMode)}
	}
	if o.adminGroup == "" {
		return nil, nil
	}
	gid, err := lookupGroup(o.adminGroup)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	return []uint32{gid}, nil
}

// listeners are the daemon's listeners: the Unix socket, TCP and pprof
// (each nil when not served), and whether socket activation passed them.
type listeners struct {
	sock          net.Listener
	releaseSocket func(unused bool)
	tcp           net.Listener
	tcpAddr       string
	pprof         net.Listener
	activated     bool
	// serving is set once the servers took the listeners; until then the
	// socket file is removed again at close, as nothing ever served it.
	serving bool
}

// openListeners brings up the listeners before the store is opened, so that a
// socket or port that cannot be had refuses the start before anything (a
// new database file, the demo workshop) is created, and a second daemon on
// the socket fails at once, before it waits for the database lock.
// Connections that arrive meanwhile wait in the listeners' backlogs.
// Listeners passed by socket activation replace --socket and --listen.
func (o *serveOptions) openListeners() (lns *listeners, err error) {
	inheritedSock, inheritedTCP, err := inheritedListeners()
	if err != nil {
		return nil, err
	}
	if inheritedSock != nil {
		o.socket = inheritedSock.Addr().String()
	}
	if inheritedTCP != nil {
		o.listen = inheritedTCP.Addr().String()
	}
	lns = &listeners{activated: inheritedSock != nil || inheritedTCP != nil}
	defer func() {
		if err != nil {
			lns.close()
			if inheritedTCP != nil && lns.tcp == nil {
				inheritedTCP.Close()
			}
		}
	}()
	if o.socket == "" {
		return lns, &exitError{code: ExitUsage, err: errors.New("--socket must not be empty")}
	}
	if inheritedSock != nil {
		lns.sock, lns.releaseSocket = inheritedSock, func(bool) { inheritedSock.Close() }
	} else {
		mode, _ := strconv.ParseUint(o.socketMode, 8, 32) // Checked by adminGIDs.
		if lns.sock, lns.releaseSocket, err = claimSocket(o.socket, os.FileMode(mode)); err != nil {
			return lns, err
		}
	}
	if inheritedTCP != nil {
		lns.tcp, lns.tcpAddr = inheritedTCP, inheritedTCP.Addr().String()
	} else if o.listen != "" {
		if lns.tcp, err = net.Listen("tcp", o.listen); err != nil {
			return lns, fmt.Errorf("listen on %s (--listen, %s): %w; choose another address, or --listen '' to serve only the socket", o.listen, EnvListen, err)
		}
		lns.tcpAddr = lns.tcp.Addr().String()
	}
	if o.pprofListen != "" {
		if lns.pprof, err = listenPprof(o.pprofListen); err != nil {
			return lns, err
		}
	}
	return lns, nil
}

// close closes the listeners, removing the socket file unless it was
// served.
func (lns *listeners) close() {
	if lns.releaseSocket != nil {
		lns.releaseSocket(!lns.serving)
	}
	for _, ln := range []net.Listener{lns.tcp, lns.pprof} {
		if ln != nil {
			ln.Close()
		}
	}
}

// openStore opens the store the flags name, counting its commits in
// metrics; a damaged meta page is refused with what --accept-rollback
// would lose, and a file served at its older meta page says so in the log.
func (o *serveOptions) openStore(ctx context.Context, metrics *server.Metrics, logger *slog.Logger) (servedStore, error) {
	store, err := o.store.openServed(ctx, storeOptions{noGroupCommit: o.noGroupCommit, onCommit: metrics.ObserveCommit, committerNice: o.committerNice, acceptRollback: o.acceptRollback, tracer: o.tracer})
	if damaged := (*boltstore.DamageError)(nil); errors.As(err, &damaged) && damaged.Rollback != nil {
		return store, &exitError{code: ExitUsage, err: fmt.Errorf("%w, or start with --accept-rollback to serve transaction %d and lose the newer one", damaged, damaged.Rollback.Txid)}
	}
	if err != nil {
		return store, err
	}
	if r := store.rollback; r != nil {
		logger.Error("serving a damaged database at its older meta page, as --accept-rollback allows: what the newer transaction committed is lost (reservations, receipts and changes); its clients' retries are decided anew", "db", store.String(), "meta_page", r.Page, "problem", r.Problem, "txid", r.Txid, "lost", r.Lost)
	}
	return store, nil
}

// committerNiceOf returns the nice value the store's group committer runs
// at, 0 (and a log line saying why) when it keeps the daemon's priority.
func (o *serveOptions) committerNiceOf(store servedStore, logger *slog.Logger) int {
	if store.committerNice == nil {
		return 0
	}
	nice, err := store.committerNice()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		logger.Info("the group committer runs at the daemon's priority: thread priorities are set on Linux only", "error", err)
	case err != nil:
		logger.Info("the group committer runs at the daemon's priority; give reserved CAP_SYS_NICE (root has it) or an RLIMIT_NICE that allows it to let it run first, or pass --committer-nice 0 to stop asking", "error", err)
	default:
		return nice
	}
	return 0
}

// newEngine puts the engine on the store, which wakes the delivery
// dispatcher through waker when it commits an event, behind the fault
// injector's decorator when fault injection is enabled.
func (o *serveOptions) newEngine(store servedStore, waker *delivery.Waker, logger *slog.Logger) (*engine.Engine, *faults.Injector) {
	engStore := delivery.WakingStore(store, waker)
	var injector *faults.Injector
	if o.faultInjection {
		injector = faults.New(logger)
		engStore = injector.Store(engStore)
	}
	opts := []engine.Option{engine.WithClock(failpoint.Clock(time.Now)), engine.WithTracer(o.tracer)}
	if store.exclusive {
		opts = append(opts, engine.WithExclusiveStore())
	}
	return engine.New(engStore, opts...), injector
}

// createDemo gives a database the daemon just created the demo workshop,
// unless --no-demo.
func (o *serveOptions) createDemo(ctx context.Context, eng *engine.Engine, store servedStore, logger *slog.Logger) error {
	if !store.Created() || o.noDemo {
		return nil
	}
	spec := engine.WorkshopSpec{Capacity: demoCapacity, MaxQuantity: demoMaxQuantity, Title: demoTitle}
	if _, _, err := eng.PutWorkshop(ctx, DemoWorkshop, spec, nil); err != nil {
		return fmt.Errorf("create the demo workshop: %w", err)
	}
	logger.Info("created the demo workshop in the new database", "workshop", DemoWorkshop, "capacity", demoCapacity, "max_quantity", demoMaxQuantity)
	return nil
}

// serverConfig is the configuration of the HTTP server.
func (o *serveOptions) serverConfig(eng *engine.Engine, store servedStore, injector *faults.Injector, metrics *server.Metrics, logger *slog.Logger, adminGIDs []uint32, caps connCaps, tcpAddr string) server.Config {
	cfg := server.Config{
		Engine:            eng,
		Logger:            logger,
		Metrics:           metrics,
		DaemonUID:         os.Getuid(),
		AdminGIDs:         adminGIDs,
		AllowedHosts:      o.allowedHosts,
		ReadHeaderTimeout: o.headerTimeout,
		WriteTimeout:      o.writeTimeout,
		MaxSocketConns:    caps.socket,
		MaxTCPConns:       caps.tcp,
		Backup:            store.backup,
		RateLimit:         server.RateLimit{Rate: o.rateLimit, Burst: o.rateBurst},
		Tracer:            o.tracer,
	}
	if tcpAddr != "" {
		cfg.LoginBaseURL = server.BaseURL(tcpAddr)
	}
	if o.oidc.publicURL != "" {
		cfg.LoginBaseURL = o.oidc.publicURL // Where browsers reach the daemon, behind a proxy too.
	}
	if injector != nil {
		cfg.Faults = injector
	}
	cfg.OIDC = o.oidc.cfg
	return cfg
}

// startBackground starts the daemon's background work: receipt retention,
// hold expiry, writing API tokens' last use, the outbox and the
// deliveries (through the mail channel too, unless it is nil). The
// function it returns stops them all, once however often it is called.
func (o *serveOptions) startBackground(ctx context.Context, eng *engine.Engine, waker *delivery.Waker, mail delivery.Channel, metrics *server.Metrics, logger *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
		stops = nil
	}
	stopJanitor, err := o.retention.start(ctx, eng, logger)
	if err != nil {
		return stop, err
	}
	stops = append(stops, stopJanitor)
	stops = append(stops, startHoldJanitor(ctx, eng, metrics.HoldsExpired, logger))
	stops = append(stops, startTokenUseWriter(ctx, eng, logger))
	stopOutbox, err := o.notify.start(ctx, eng, metrics, logger)
	if err != nil {
		stop()
		return func() {}, err
	}
	stops = append(stops, stopOutbox)
	stopDeliveries, err := o.delivery.start(ctx, eng, waker, mail, o.mail.holdReminder, metrics, logger)
	if err != nil {
		stop()
		return func() {}, err
	}
	stops = append(stops, stopDeliveries)
	return stop, nil
}

// connCaps raises the open file limit to its hard limit and fits the
// listeners' connection caps into it. A failure to raise the limit is no
// error: the caps are then fitted into the limit as it is, and the failure
// is returned as a warning for the log.
func (o *serveOptions) connCaps() (caps connCaps, limit uint64, warning, err error) {
	limit, warning = raiseOpenFileLimit()
	if errors.Is(warning, errors.ErrUnsupported) {
		return connCaps{tcp: o.maxTCPConns, socket: o.maxSocketConns}, 0, nil, nil
	}
	caps, err = fitConnCaps(limit, o.maxTCPConns, o.maxSocketConns, o.maxTCPGiven, o.maxSocketGiven, o.listen != "")
	return caps, limit, warning, err
}

// newLogger returns the daemon's logger, writing lines of format from
// level on to w, every duration in milliseconds (internal/logs).
func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	l, err := logs.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: use %s", level, strings.Join(logs.Levels, ", "))
	}
	if !slices.Contains(logs.Formats, format) {
		return nil, fmt.Errorf("--log-format %q: use %s", format, strings.Join(logs.Formats, " or "))
	}
	return logs.New(w, format, l)
}
