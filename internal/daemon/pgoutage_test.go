package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// answerLog counts the answers to reservation requests by status and
// records every answer that breaks the rule for a store that cannot serve:
// 503 store_unavailable with Retry-After, never another 5xx.
type answerLog struct {
	mu       sync.Mutex
	byStatus map[int]int
	bad      []string
}

func (l *answerLog) record(resp *http.Response, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byStatus[resp.StatusCode]++
	if resp.StatusCode < 500 {
		return
	}
	if err := wantStoreUnavailable(resp, body); err != nil {
		l.bad = append(l.bad, err.Error())
	}
}

// firstBad returns the first answer that broke the rule, or "".
func (l *answerLog) firstBad() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) == 0 {
		return ""
	}
	return l.bad[0]
}

func (l *answerLog) count(status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byStatus[status]
}

// wantStoreUnavailable checks that an answer is the problem of a store that
// cannot serve.
func wantStoreUnavailable(resp *http.Response, body []byte) error {
	var p api.Problem
	json.Unmarshal(body, &p)
	if resp.StatusCode != http.StatusServiceUnavailable || p.Code != engine.CodeStoreUnavailable || p.Status != resp.StatusCode ||
		resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Content-Type") != api.MediaProblem {
		return fmt.Errorf("%d Retry-After %q %q: %s; want 503 store_unavailable with Retry-After 1",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), body)
	}
	return nil
}

// observed is a transport that shows every reservation answer to an
// answerLog before the client reads it.
type observed struct {
	next http.RoundTripper
	log  *answerLog
}

func (o observed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || r.URL.Path != api.PathReservations {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil {
		o.log.record(resp, body)
	}
	return resp, err
}

// TestPostgresBackendsTerminated runs clients against a real reserved on
// PostgreSQL while a separate admin connection terminates the daemon's
// backends (pg_terminate_backend) again and again, as a database restart
// does. Every answer during the outage is a decision or 503
// store_unavailable with Retry-After, never a 500; the clients retry the
// 503s with the same key, and afterwards every key has its first answer
// and at most one reservation, exactly the 201s.
func TestPostgresBackendsTerminated(t *testing.T) {
	dsn, schema := pgtest.FreshSchema(t)
	server := pgtest.ServerDSN(t)
	app := "reserved-" + schema // Names the daemon's backends.
	addr := freeAddr(t)
	socket := filepath.Join(servertest.ShortTempDir(t), "t.sock")
	p := startOnPostgres(t, pgtest.WithParams(t, dsn, map[string]string{"application_name": app}), socket, addr, "--no-demo")
	ctx := context.Background()
	admin := p.socketClient()
	for i := range tortureWorkshops {
		if _, _, err := admin.PutWorkshop(ctx, fmt.Sprintf("torture-%d", i), engine.WorkshopSpec{Capacity: tortureCapacity, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	log := &answerLog{byStatus: map[int]int{}}
	hc := &http.Client{Transport: observed{next: http.DefaultTransport.(*http.Transport).Clone(), log: log}}
	clients := make([]*tortureClient, 4)
	for i := range clients {
		actor := fmt.Sprintf("client-%d", i)
		token, err := admin.CreateToken(ctx, actor, false)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = &tortureClient{
			actor: actor, cs: []*client.Client{{BaseURL: "http://" + addr, Token: token, HTTPClient: hc}},
			rng:  rand.New(rand.NewPCG(rand.Uint64(), uint64(i))),
			reqs: map[engine.OperationKey]engine.Request{}, first: map[engine.OperationKey]answer{},
		}
	}

	l := newLoad(len(clients))
	for _, tc := range clients {
		l.goClient(tc.run)
	}
	l.waitAnswers(t, 40, "answers before the outage")
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	terminated := 0
	servertest.Eventually(t, tortureIntentTimeout, "30 answers 503 while the daemon's backends are terminated", func() bool {
		var n int
		// The daemon's backends are chosen first: the planner may not try
		// to terminate anybody else's.
		err := conn.QueryRow(ctx, `WITH daemon AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE application_name = $1)
			SELECT count(*) FROM daemon WHERE pg_terminate_backend(pid)`, app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		terminated += n
		if len(l.errs) > 0 {
			t.Fatalf("a client failed during the outage: %v", <-l.errs)
		}
		if bad := log.firstBad(); bad != "" {
			t.Fatalf("during the outage the daemon answered %s", bad)
		}
		return log.count(http.StatusServiceUnavailable) >= 30
	})
	l.waitAnswers(t, 40, "answers after the outage")
	l.end(t)
	t.Logf("%d backends terminated; answers by status: %v", terminated, log.byStatus)
	if bad := log.firstBad(); bad != "" {
		t.Errorf("during the outage the daemon answered %s", bad)
	}
	if causes := unavailableCauses(t, p); len(causes) == 0 {
		t.Error("no request log line of a 503 with its cause")
	}
	verifyTortured(t, clients, func() engine.Store {
		if code := p.stop(t); code != 0 {
			t.Errorf("exit code after SIGTERM = %d", code)
		}
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{NoMigrate: true, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, "--store", "postgres", "--dsn", dsn)
}

// TestPostgresUnreachable cuts a real reserved off its PostgreSQL (through
// a proxy: the connections reset, new ones refused). Reservations, reads
// and reservectl get 503 store_unavailable with Retry-After; reservectl
// reserve exits 75 with its intent open and says to retry. Once the
// database is back, the retries with the same keys get their first,
// decided answers, and each key has exactly one reservation.
func TestPostgresUnreachable(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	proxy, via := pgtest.NewProxy(t, dsn)
	socket := filepath.Join(servertest.ShortTempDir(t), "u.sock")
	p := startOnPostgres(t, via, socket, "127.0.0.1:0", "--no-demo")
	ctx := context.Background()
	c := p.socketClient()
	if _, _, err := c.PutWorkshop(ctx, "ws", engine.WorkshopSpec{Capacity: 5, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	// A token the daemon has not seen used yet: its check needs the store.
	token, err := c.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	key := engine.OperationKey(uuid.NewString())
	post := func() (*http.Response, []byte) {
		t.Helper()
		h := http.Header{api.HeaderIdempotencyKey: {string(key)}}
		resp, body, err := c.Do(ctx, http.MethodPost, api.PathReservations, h, []byte(`{"workshop":"ws","quantity":2}`))
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	state := filepath.Join(t.TempDir(), "intent.json")
	run := func(global []string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Run(ctx, append(global, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	reservectl := func(args ...string) (int, string, string) {
		return run([]string{"--socket", socket, "--state", state}, args...)
	}
	aliceState := filepath.Join(t.TempDir(), "alice.json")
	alice := func(args ...string) (int, string, string) {
		return run([]string{"--server", p.url, "--token", token, "--state", aliceState}, args...)
	}

	proxy.Cut()
	// The pool's connections reset first, then new ones are refused.
	for range 3 {
		resp, body := post()
		if err := wantStoreUnavailable(resp, body); err != nil {
			t.Fatalf("reserve while the database is cut off: %v", err)
		}
	}
	for _, path := range []string{api.PathWorkshops, api.OperationPath(key)} {
		resp, body, err := c.Do(ctx, http.MethodGet, path, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := wantStoreUnavailable(resp, body); err != nil {
			t.Errorf("GET %s while the database is cut off: %v", path, err)
		}
	}
	code, stdout, stderr := reservectl("reserve", "--workshop", "ws", "--quantity", "1")
	want := "outcome unknown: reserved's store is unavailable (unreachable or restarting): 503 Service Unavailable; your intent is kept — run: reservectl reserve --retry\n"
	if code != cli.ExitUnknown || stdout != "" || stderr != want {
		t.Errorf("reservectl reserve while the database is cut off: exit %d, stdout %q, stderr %q; want exit 75 and %q", code, stdout, stderr, want)
	}
	wantOpenIntent(t, state, 1)
	// Over TCP the token cannot be checked: nothing is sent, and the intent
	// is kept for --retry all the same.
	code, stdout, stderr = alice("reserve", "--workshop", "ws", "--quantity", "1")
	want = "outcome unknown: nothing was sent: reserved's store is unavailable (unreachable or restarting); your intent is kept — run: reservectl reserve --retry\n"
	if code != cli.ExitUnknown || stdout != "" || stderr != want {
		t.Errorf("reservectl reserve over TCP while the database is cut off: exit %d, stdout %q, stderr %q; want exit 75 and %q", code, stdout, stderr, want)
	}
	wantOpenIntent(t, aliceState, 0)
	code, stdout, _ = reservectl("status")
	if code != cli.ExitUnknown || !strings.Contains(stdout, "state:    open, outcome unknown\n") ||
		!strings.Contains(stdout, "receipt:  cannot ask reserved: reserved's store is unavailable (unreachable or restarting)") {
		t.Errorf("reservectl status while the database is cut off: exit %d\n%s", code, stdout)
	}
	if causes := unavailableCauses(t, p); !strings.Contains(strings.Join(causes, "\n"), "connection refused") {
		t.Errorf("no request log line of a 503 names the refused connection:\n%s", strings.Join(causes, "\n"))
	}

	proxy.Restore()
	code, stdout, stderr = reservectl("reserve", "--retry")
	if code != cli.ExitReserved || !regexp.MustCompile(`^reserved 1 place in ws \(reservation [0-9a-f]{32}\)\n$`).MatchString(stdout) {
		t.Errorf("reservectl reserve --retry after the outage: exit %d, stdout %q, stderr %q; want a first reservation", code, stdout, stderr)
	}
	code, stdout, stderr = alice("reserve", "--retry")
	if code != cli.ExitReserved || !regexp.MustCompile(`^reserved 1 place in ws \(reservation [0-9a-f]{32}\)\n$`).MatchString(stdout) {
		t.Errorf("reservectl reserve --retry over TCP after the outage: exit %d, stdout %q, stderr %q; want a first reservation", code, stdout, stderr)
	}
	resp, first := post()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(api.HeaderReplayed) != "false" {
		t.Fatalf("retry after the outage = %d %s (replayed %s), want a first 201", resp.StatusCode, first, resp.Header.Get(api.HeaderReplayed))
	}
	resp, again := post()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(api.HeaderReplayed) != "true" || !bytes.Equal(again, first) {
		t.Fatalf("second retry = %d %s (replayed %s), want the first answer replayed", resp.StatusCode, again, resp.Header.Get(api.HeaderReplayed))
	}
	w, err := c.Workshop(ctx, "ws")
	if err != nil || w.Reserved != 4 {
		t.Fatalf("workshop ws = %+v, %v; want the 4 places of the three intents", w, err)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{NoMigrate: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	perKey := map[engine.OperationKey]int{}
	err = s.View(ctx, func(tx engine.Tx) error {
		return tx.ForEachReservation(func(r engine.Reservation) error { perKey[r.OperationKey]++; return nil })
	})
	if err != nil || len(perKey) != 3 || perKey[key] != 1 {
		t.Fatalf("reservations by key = %v, %v; want one for each of the three intents", perKey, err)
	}
}

// wantOpenIntent fails the test unless the state file holds an open intent
// sent attempts times.
func wantOpenIntent(t *testing.T, state string, attempts int) {
	t.Helper()
	j, err := intent.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	in, err := j.Load()
	if err != nil || in == nil || !in.IsOpen() || in.Attempts != attempts {
		t.Fatalf("intent in %s = %+v, %v; want an open one sent %d times", state, in, err, attempts)
	}
}

// unavailableCauses returns the error of every request log line of a 503
// store_unavailable, each of which must name the failure behind it.
func unavailableCauses(t *testing.T, p *proc) []string {
	t.Helper()
	recs, err := p.logs.Records()
	if err != nil {
		t.Fatal(err)
	}
	// What the client is told; the log line goes on with the cause.
	told := engine.CodeStoreUnavailable + ": " + engine.ErrorMessage(engine.StoreUnavailable(errors.New("cause"))) + ": "
	var causes []string
	for _, r := range recs {
		if r["msg"] != "request" || r["code"] != engine.CodeStoreUnavailable {
			continue
		}
		cause, _ := r["error"].(string)
		_, after, found := strings.Cut(cause, told)
		if r["level"] != "ERROR" || r["status"] != float64(http.StatusServiceUnavailable) || !found || after == "" {
			t.Errorf("request log line of a store_unavailable answer without its cause: %v", r)
		}
		causes = append(causes, cause)
	}
	return causes
}
