package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/pgcluster"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/redact"
)

// Config is one run.
type Config struct {
	Seed uint64
	// Store is "bolt" or "postgres"; Daemons how many daemons serve it
	// (one for bolt).
	Store   string
	Daemons int
	// DSN is the PostgreSQL server's for a postgres run; the run makes a
	// schema of its own there and drops it at the end.
	DSN    string
	Bin    Binaries
	Commit string
	Size   Size
	// TempDir is where the run's files go; empty means the system's.
	TempDir string
	// DumpDir, if set, receives the history of every run with
	// violations, one file per seed.
	DumpDir string
	// Cluster makes a postgres run build a PostgreSQL cluster of its own,
	// a primary with a synchronous standby, instead of a schema on DSN's
	// server, and restart and fail over its primary (see OwnsCluster).
	Cluster bool
}

// Size is how much a run does.
type Size struct {
	GoClients, Browsers, CLIs int
	// Phases are separated by clock jumps (some of them) and every
	// client makes Intents intents in each (a CLI client CLIIntents).
	Phases, Intents, CLIIntents int
	// Workshops is how many workshops the clients share.
	Workshops int
	// ImportRows is the size of the interrupted import; 0 runs none.
	ImportRows int
	// ImportBatch bounds the import's --batch-size, drawn from 1 to it.
	ImportBatch int
	// FaultEvery bounds the answers between two faults, drawn from 1 to
	// it.
	FaultEvery int
	// DiskFull runs the bolt store on a small tmpfs that is filled now and
	// then (it needs root; without it the fault is skipped and said so).
	DiskFull bool
}

// Sizes of runs.
var (
	CISize   = Size{GoClients: 3, Browsers: 1, CLIs: 1, Phases: 2, Intents: 25, CLIIntents: 4, Workshops: 3, ImportRows: 40, ImportBatch: 12, FaultEvery: 40, DiskFull: true}
	LongSize = Size{GoClients: 4, Browsers: 1, CLIs: 1, Phases: 3, Intents: 30, CLIIntents: 3, Workshops: 4, ImportRows: 500, ImportBatch: 40, FaultEvery: 16, DiskFull: true}
)

// Result is what a run did and found.
type Result struct {
	Config     Config
	Ops        int
	OpsByVia   map[string]int // Operations by the front end that sent them.
	Atomic     map[string]int // Decisions of atomic batches (AtomicCounts).
	Waitlist   map[string]int // What the waiting list saw (WaitlistCounts).
	Ambiguous  int
	Sends      int64
	Crashes    map[string]int // Daemon crash-restart cycles by cause: a failpoint's name, or "sigkill".
	Faults     map[string]int // Other faults by kind.
	CheckTime  time.Duration
	Elapsed    time.Duration
	Violations []Violation
	Unknown    int
	Skipped    []string
}

// CrashTotal is the number of daemon crash-restart cycles.
func (r Result) CrashTotal() int {
	n := 0
	for _, c := range r.Crashes {
		n += c
	}
	return n
}

// Line is the run's one line.
func (r Result) Line() string {
	store := r.Config.Store
	if r.Config.Daemons > 1 {
		store += fmt.Sprintf("×%d", r.Config.Daemons)
	}
	if r.Config.Cluster {
		store += "+cluster"
	}
	line := fmt.Sprintf("seed=%d commit=%s store=%s ops=%d ambiguous=%d atomic=%s waitlist=%s crashes=%d%s faults=%s check=%s violations=%d",
		r.Config.Seed, r.Config.Commit, store, r.Ops, r.Ambiguous, counts(r.Atomic), counts(r.Waitlist), r.CrashTotal(), counts(r.Crashes), counts(r.Faults),
		r.CheckTime.Round(time.Millisecond), len(r.Violations))
	if r.Unknown > 0 {
		line += fmt.Sprintf(" undecided_partitions=%d", r.Unknown)
	}
	for _, v := range r.Violations {
		line += "\n  violation " + v.String()
	}
	return line
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// run is one run in progress.
type run struct {
	cfg       Config
	rng       *mrand.Rand // The fault schedule's.
	h         *History
	dir       string
	sockDir   string
	workshops []string
	// waitlisted are the workshops with waiting lists, which only
	// waitlistStep's intents are about (see Final.Waitlisted).
	waitlisted  []string
	capacity    map[string]int
	maxQuantity int
	slots       []*slot
	sink        *sink
	hooks       *hookSink
	proxies     []*proxy
	clockFile   string
	dsn         string // The run's own schema's or cluster's, for postgres.
	appName     string
	diskDir     string // A mounted tmpfs for the bolt file, or "".

	// cluster is the run's own PostgreSQL cluster, or nil; clusterFirst
	// is 1 when the first phase's cluster fault is a failover, 0 when it
	// is a restart.
	cluster      *pgcluster.Cluster
	clusterFirst int

	sends, answers, cliKills atomic.Int64

	mu      sync.Mutex
	crashes map[string]int
	faults  map[string]int
	lent    []lentKey
	errs    []error
	skipped []string

	importGot, importWant []string
}

// lentKey is a reserve intent's key and payload that another actor may
// send as its own intent.
type lentKey struct {
	actor string
	key   engine.OperationKey
	req   engine.Request
}

func (r *run) lendKey(actor string, key engine.OperationKey, req engine.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lent) < 64 {
		r.lent = append(r.lent, lentKey{actor, key, req})
	}
}

// borrowKey returns a key another actor used, to be sent by actor as its
// own intent: the same key from another actor is another intent.
func (r *run) borrowKey(actor string) (engine.OperationKey, engine.Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, l := range r.lent {
		if l.actor != actor {
			r.lent = append(r.lent[:i], r.lent[i+1:]...)
			return l.key, l.req, true
		}
	}
	return "", engine.Request{}, false
}

func (r *run) count(m map[string]int, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m[what]++
}

// fail records a failure of the harness or of a program, which the run
// reports as a violation.
func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *run) skip(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped = append(r.skipped, what)
}

// Run runs one seeded run and checks it. The error is for a run that could
// not be set up; everything the run found, including programs that
// failed, is in the Result's violations.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	if cfg.Daemons < 1 || cfg.Store == "bolt" {
		cfg.Daemons = 1
	}
	r := &run{cfg: cfg, rng: mrand.New(mrand.NewPCG(cfg.Seed, 0xc4a05)), h: NewHistory(), capacity: map[string]int{},
		maxQuantity: 3, crashes: map[string]int{}, faults: map[string]int{}}
	res := Result{Config: cfg}
	var err error
	if r.dir, err = os.MkdirTemp(cfg.TempDir, fmt.Sprintf("reservechaos-%d-", cfg.Seed)); err != nil {
		return res, err
	}
	defer os.RemoveAll(r.dir)
	// Unix socket paths are short: they get a directory of their own
	// under /tmp.
	if r.sockDir, err = os.MkdirTemp("/tmp", "rc"); err != nil {
		return res, err
	}
	defer os.RemoveAll(r.sockDir)
	defer r.cleanup()
	if err := r.setup(ctx); err != nil {
		return res, err
	}
	r.exercise()
	final, ferr := r.finish(ctx)
	ops := r.h.Ops()
	var report Report
	if ferr != nil {
		// Without the final state there is nothing to check the history
		// against: the failure to get it is the run's one finding.
		r.fail(ferr)
	} else {
		report = Check(ops, final)
	}
	res.CheckTime, res.Violations, res.Unknown = report.Elapsed, report.Violations, report.Unknown
	if cfg.DumpDir != "" && len(res.Violations)+len(r.errs) > 0 {
		r.dump(ops, report)
	}
	for _, e := range r.errs {
		res.Violations = append(res.Violations, Violation{"run", e.Error()})
	}
	res.Ops, res.Sends = len(ops), r.sends.Load()
	res.OpsByVia, res.Atomic, res.Waitlist = map[string]int{}, AtomicCounts(ops), WaitlistCounts(ops, final)
	for _, op := range ops {
		res.OpsByVia[op.Via]++
		if op.Unclear > 0 {
			res.Ambiguous++
		}
	}
	res.Config, res.Crashes, res.Faults, res.Skipped = r.cfg, r.crashes, r.faults, append(r.skipped, final.Skipped...)
	for _, p := range r.proxies {
		r.faults["proxy_drop"] += int(p.dropped.Load())
		r.faults["proxy_duplicate"] += int(p.duplicated.Load())
		r.faults["proxy_delay"] += int(p.delayed.Load())
	}
	if n := r.cliKills.Load(); n > 0 {
		r.faults["reservectl_sigkill"] += int(n)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// setup starts the sink, the daemons and the proxies, and creates the
// workshops.
func (r *run) setup(ctx context.Context) error {
	var err error
	if r.sink, err = newSink(r.cfg.Seed); err != nil {
		return err
	}
	if r.hooks, err = newHookSink(r.cfg.Seed); err != nil {
		return err
	}
	r.clockFile = filepath.Join(r.dir, "clock")
	if err := os.WriteFile(r.clockFile, []byte("0s\n"), 0o644); err != nil {
		return err
	}
	switch r.cfg.Store {
	case "bolt":
		if r.cfg.Size.DiskFull {
			r.mountDisk()
		}
	case "postgres":
		owned := false
		if r.cfg.Cluster {
			if owned, err = r.startCluster(ctx); err != nil {
				return err
			}
		}
		if !owned {
			r.cfg.Cluster = false // Skipped: the run is on the shared server.
			if err := r.freshSchema(ctx); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("store %q: use bolt or postgres", r.cfg.Store)
	}
	for i := range r.cfg.Daemons {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		s := &slot{r: r, idx: i, addr: addr, socket: filepath.Join(r.sockDir, fmt.Sprintf("d%d.sock", i)),
			rng: mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(100+i))), supervising: make(chan struct{})}
		if err := s.start(false); err != nil {
			return err
		}
		r.slots = append(r.slots, s)
		p, err := newProxy(r.cfg.Seed+uint64(i), addr)
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, p)
	}
	admin := &client.Client{Socket: r.slots[0].socket}
	if err := r.hooks.subscribe(ctx, admin); err != nil {
		return err
	}
	for i := range r.cfg.Size.Workshops {
		id := fmt.Sprintf("w-%d", i)
		capacity := 6 + r.rng.IntN(20)
		spec := engine.WorkshopSpec{Capacity: capacity, MaxQuantity: r.maxQuantity}
		if err := untilAnswered(func() error { _, _, err := admin.PutWorkshop(ctx, id, spec, nil); return err }); err != nil {
			return fmt.Errorf("create workshop %s: %w", id, err)
		}
		r.workshops = append(r.workshops, id)
		r.capacity[id] = capacity
	}
	if err := r.createAtomicWorkshops(ctx, admin); err != nil {
		return err
	}
	// A workshop with a waiting list: small, so that it is full most of
	// the time, and with offers that last less than a clock jump, so that
	// jumps carry offers past their deadlines.
	id := "wl-0"
	capacity := 2 + r.rng.IntN(3)
	spec := engine.WorkshopSpec{Capacity: capacity, MaxQuantity: min(2, r.maxQuantity), OfferTTLSeconds: offerTTLSeconds}
	if err := untilAnswered(func() error { _, _, err := admin.PutWorkshop(ctx, id, spec, nil); return err }); err != nil {
		return fmt.Errorf("create workshop %s: %w", id, err)
	}
	r.waitlisted = append(r.waitlisted, id)
	r.capacity[id] = capacity
	for _, s := range r.slots {
		go s.supervise()
	}
	return nil
}

// clientsOf returns the clients of token: a direct and a proxied one for
// every daemon.
func (r *run) clientsOf(token string) []*client.Client {
	var cs []*client.Client
	for i, s := range r.slots {
		cs = append(cs, &client.Client{BaseURL: "http://" + s.addr, Token: token}, &client.Client{BaseURL: "http://" + r.proxies[i].addr, Token: token})
	}
	return cs
}

// exercise runs the clients phase after phase, with the faults, and the
// import in the first phase.
func (r *run) exercise() {
	ctx := context.Background()
	admin := &client.Client{Socket: r.slots[0].socket}
	token := func(actor string) string {
		var t string
		err := untilAnswered(func() (err error) { t, err = admin.CreateToken(ctx, actor, false); return err })
		if err != nil {
			r.fail(fmt.Errorf("create a token for %s: %w", actor, err))
		}
		return t
	}
	sz := r.cfg.Size
	var actors []*actorClient
	for i := range sz.GoClients + sz.Browsers {
		c := &actorClient{r: r, id: i, actor: fmt.Sprintf("go-%d", i), via: "go", rng: mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(i+1)))}
		if i >= sz.GoClients {
			c.actor, c.via, c.session = fmt.Sprintf("browser-%d", i), "browser", map[string]*Op{}
		}
		c.cs = r.clientsOf(token(c.actor))
		actors = append(actors, c)
	}
	var clis []*cliClient
	for i := range sz.CLIs {
		actor := fmt.Sprintf("cli-%d", i)
		dir := filepath.Join(r.dir, actor)
		os.MkdirAll(dir, 0o700)
		c := &cliClient{r: r, id: 1000 + i, actor: actor, rng: mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(500+i))), state: filepath.Join(dir, "intent.json")}
		url := "http://" + r.slots[i%len(r.slots)].addr
		if c.rng.IntN(2) == 0 {
			url = "http://" + r.proxies[i%len(r.proxies)].addr
		}
		c.env = cliEnv(dir, url, token(actor))
		clis = append(clis, c)
	}
	if len(r.errs) > 0 {
		return
	}
	var importDone chan struct{}
	if sz.ImportRows > 0 {
		importDone = make(chan struct{})
		tok := token("importer")
		go func() {
			defer close(importDone)
			r.runImport(ctx, tok)
		}()
	}
	for phase := range sz.Phases {
		stop := make(chan struct{})
		faultsDone := make(chan struct{})
		cf := r.planClusterFault(phase)
		go func() {
			defer close(faultsDone)
			r.injectFaults(stop, cf)
		}()
		var wg sync.WaitGroup
		for _, c := range actors {
			wg.Go(func() { c.runIntents(sz.Intents) })
		}
		for _, c := range clis {
			wg.Go(func() { c.runIntents(sz.CLIIntents) })
		}
		wg.Wait()
		if phase == 0 && importDone != nil {
			<-importDone // The import finishes before any clock jump.
		}
		close(stop)
		<-faultsDone
		if phase < sz.Phases-1 && r.rng.IntN(3) > 0 {
			r.jumpClock()
		}
	}
}

// jumpClock moves the daemons' clock past every hold's deadline and the
// receipts' retention; no operation is in flight.
func (r *run) jumpClock() {
	r.h.Jump()
	offset := time.Duration(r.h.Epoch()) * clockJump
	if err := os.WriteFile(r.clockFile, []byte(offset.String()+"\n"), 0o644); err != nil {
		r.fail(err)
	}
	r.count(r.faults, "clock_jump")
}

// The daemons keep receipts for receiptRetention; a clock jump moves
// their clock by clockJump, past that and past every hold's ttl (at most
// an hour here).
const (
	receiptRetention = 24 * time.Hour
	clockJump        = 25 * time.Hour
	// offerTTLSeconds is how long the waiting lists' offers last: longer
	// than a run between two jumps, shorter than a jump.
	offerTTLSeconds = 3600
)

// injectFaults injects faults until stop is closed, each after a random
// number of answers: SIGKILL of a daemon (restarted at once, perhaps with
// a failpoint armed), a killed PostgreSQL backend, a full disk, and the
// phase's cluster fault cf unless it is nil. The cluster fault comes after
// cf.after other faults, or when stop is closed if the phase ended before.
func (r *run) injectFaults(stop <-chan struct{}, cf *clusterFault) {
	nth := 0 // The faults injected so far.
	defer func() {
		if cf != nil && nth <= cf.after {
			r.breakCluster(cf, stop)
		}
	}()
	for ; ; nth++ {
		if r.waitAnswers(stop, int64(1+r.rng.IntN(r.cfg.Size.FaultEvery)), 3*time.Second) {
			return
		}
		switch n := r.rng.IntN(100); {
		case cf != nil && nth == cf.after:
			r.breakCluster(cf, stop)
		case n < 55:
			r.slots[r.rng.IntN(len(r.slots))].killRestart()
		case n < 70 && r.cfg.Store == "postgres":
			r.terminateBackend()
		case n < 78 && r.diskDir != "":
			r.fillDisk(stop)
		}
	}
}

// freeAddr returns a loopback address that was free a moment ago, so a
// restarted daemon listens where its clients send.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// finish restarts every daemon without failpoints, replays every settled
// intent, waits for the outbox, stops the daemons and reads the stores.
func (r *run) finish(ctx context.Context) (Final, error) {
	final := Final{Capacity: r.capacity, Waitlisted: r.waitlisted}
	for _, s := range r.slots {
		s.stopSupervising()
		if err := s.restartClean(); err != nil {
			return final, err
		}
	}
	// Every intent once more: the first answer, byte for byte.
	var wg sync.WaitGroup
	byActor := map[string][]*Op{}
	for _, op := range r.h.Ops() {
		if op.Role == Intent && op.Answered() && op.Via != "import" {
			byActor[op.Actor] = append(byActor[op.Actor], op)
		}
	}
	tokens := map[string]string{}
	admin := &client.Client{Socket: r.slots[0].socket}
	for actor := range byActor {
		var t string
		err := untilAnswered(func() (err error) { t, err = admin.CreateToken(ctx, actor, false); return err })
		if err != nil {
			return final, fmt.Errorf("token for the final replays: %w", err)
		}
		tokens[actor] = t
	}
	for actor, ops := range byActor {
		c := &actorClient{r: r, id: 2000, actor: actor, via: "final", rng: mrand.New(mrand.NewPCG(r.cfg.Seed, 7)),
			cs: []*client.Client{{BaseURL: "http://" + r.slots[0].addr, Token: tokens[actor]}}}
		wg.Go(func() {
			for _, op := range ops {
				c.repeat(op, Replay)
			}
		})
	}
	wg.Wait()
	r.drainOutbox()
	r.drainHooks(ctx, admin)
	var ws []engine.Workshop
	err := untilAnswered(func() (err error) { ws, err = admin.Workshops(ctx, true); return err })
	if err != nil {
		return final, fmt.Errorf("read the workshops: %w", err)
	}
	final.Workshops = ws
	for _, s := range r.slots {
		if err := s.d.stop(); err != nil {
			r.fail(err)
		}
	}
	final.Received, final.ReceivedPayloads = r.sink.snapshot()
	final.Hooks, final.HookBad = r.hooks.snapshot()
	if err := r.readStore(ctx, &final); err != nil {
		return final, err
	}
	final.CheckOutput = r.reservedCheck()
	final.ImportGot, final.ImportWant = r.importGot, r.importWant
	return final, nil
}

// drainOutbox waits until the sink has an event for every acknowledged
// reservation and cancellation, or a minute has passed (the check then
// names what is missing).
func (r *run) drainOutbox() {
	want := map[string]bool{}
	for _, op := range r.h.Ops() {
		if a, ok := op.Answer(); ok && op.Role == Intent {
			switch a.Status {
			case engine.StatusReserved:
				want[engine.EventReserved+" "+a.ReservationID] = true
			case engine.StatusCancelled:
				want[engine.EventCancelled+" "+a.ReservationID] = true
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_, payloads := r.sink.snapshot()
		got := map[string]bool{}
		for _, p := range payloads {
			var ev engine.EventPayload
			if decodeJSON(p, &ev) == nil {
				got[ev.Type+" "+ev.ReservationID] = true
			}
		}
		missing := 0
		for k := range want {
			if !got[k] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readStore reads the store of the stopped daemons.
func (r *run) readStore(ctx context.Context, final *Final) error {
	var st engine.Store
	switch r.cfg.Store {
	case "bolt":
		s, err := boltstore.Open(r.dbPath(), boltstore.Options{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("open the bolt store read-only: %w", err)
		}
		defer s.Close()
		st = s
	default:
		s, err := pgstore.Open(ctx, r.dsn, pgstore.Options{})
		if err != nil {
			return fmt.Errorf("open the PostgreSQL store: %w", err)
		}
		defer s.Close()
		st = s
	}
	return st.View(ctx, func(tx engine.Tx) error {
		final.Reservations, final.Holds, final.Events = nil, nil, nil
		if err := tx.ForEachReservation(func(res engine.Reservation) error {
			final.Reservations = append(final.Reservations, res)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.ForEachHold(func(h engine.Hold) error {
			final.Holds = append(final.Holds, h)
			return nil
		}); err != nil {
			return err
		}
		if err := readStoredKeys(tx, final); err != nil {
			return err
		}
		final.Entries = nil
		if err := tx.ForEachWaitEntry(func(e engine.WaitEntry) error {
			final.Entries = append(final.Entries, e)
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachEvent(func(ev engine.Event) error {
			final.Events = append(final.Events, ev)
			return nil
		})
	})
}

// reservedCheck runs `reserved check` on the store and returns its output
// unless it found nothing.
func (r *run) reservedCheck() string {
	args := []string{"check", "--db", r.dbPath()}
	if r.cfg.Store == "postgres" {
		args = []string{"check", "--store", "postgres", "--dsn", r.dsn}
	}
	cmd := exec.Command(r.cfg.Bin.Reserved, args...)
	// The check judges holds by the daemons' clock, which the run moved.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, failpoint.EnvClock + "=" + r.clockFile}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("reserved %s: %v: %s", strings.Join(redact.Args(args), " "), err, out)
	}
	return ""
}

func (r *run) dbPath() string {
	if r.diskDir != "" {
		return filepath.Join(r.diskDir, "reserved.db")
	}
	return filepath.Join(r.dir, "reserved.db")
}

// cleanup stops whatever still runs and removes the run's schema and
// tmpfs.
func (r *run) cleanup() {
	for _, s := range r.slots {
		s.stopSupervising()
		if s.d != nil && !s.d.exited() {
			s.d.kill()
		}
	}
	for _, p := range r.proxies {
		p.close()
	}
	if r.hooks != nil {
		r.hooks.close()
	}
	if r.sink != nil {
		r.sink.close()
	}
	if r.cluster != nil {
		if err := r.cluster.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "reservechaos: remove the PostgreSQL cluster: %v\n", err)
		}
	} else {
		r.dropSchema()
	}
	r.unmountDisk()
}

// dump writes the run's history, and the workshops that are not
// linearizable on their own, into the dump directory.
func (r *run) dump(ops []*Op, report Report) {
	f, err := os.Create(filepath.Join(r.cfg.DumpDir, fmt.Sprintf("seed-%d.history", r.cfg.Seed)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "reservechaos: %v\n", err)
		return
	}
	defer f.Close()
	for w, wops := range report.Illegal {
		fmt.Fprintf(f, "== workshop %s is not linearizable\n", w)
		Dump(f, wops)
	}
	fmt.Fprintf(f, "== the whole history\n")
	Dump(f, ops)
}
