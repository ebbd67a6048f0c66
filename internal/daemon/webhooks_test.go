package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// webhookRecv is a running webhookrecv process (internal/tools/webhookrecv):
// a webhook endpoint that verifies every request with the Standard
// Webhooks reference library and records it.
type webhookRecv struct {
	url    string // http://host:port
	record string // Its record: one JSON line per request.
}

// recvBehaviour is how a path of webhookrecv answers: its first Fail
// verified requests 500, the next Gone 410, then 200; Mode "fail"
// answers every one 500 and "hang" none.
type recvBehaviour struct {
	Secret string `json:"secret"`
	Fail   int    `json:"fail,omitempty"`
	Gone   int    `json:"gone,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// recvLine is one line of webhookrecv's record.
type recvLine struct {
	Path       string    `json:"path"`
	WebhookID  string    `json:"webhook_id"`
	SHA256     string    `json:"sha256"`
	Type       string    `json:"type"`
	EventTime  time.Time `json:"event_time"`
	ReceivedAt time.Time `json:"received_at"`
	Status     int       `json:"status"`
	Bad        string    `json:"bad"`
}

// startWebhookRecv builds webhookrecv and runs it until the test ends.
func startWebhookRecv(t *testing.T) *webhookRecv {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "webhookrecv")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/reserve/reserve/internal/tools/webhookrecv").CombinedOutput(); err != nil {
		t.Fatalf("build webhookrecv: %v\n%s", err, out)
	}
	r := &webhookRecv{record: filepath.Join(t.TempDir(), "record.jsonl")}
	cmd := exec.Command(bin, "--record", r.record)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("webhookrecv's log:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("webhookrecv did not say where it listens: %q, %v; %s", line, err, stderr.String())
	}
	r.url = "http://" + addr
	return r
}

// configure tells the receiver how path answers.
func (r *webhookRecv) configure(t *testing.T, path string, b recvBehaviour) {
	t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	putNoContent(t, r.url+"/_paths"+path, bytes.NewReader(body), "configure "+path)
}

// lines returns the requests recorded so far.
func (r *webhookRecv) lines(t *testing.T) []recvLine {
	t.Helper()
	b, err := os.ReadFile(r.record)
	if err != nil {
		t.Fatal(err)
	}
	var ls []recvLine
	for raw := range bytes.Lines(b) {
		if !bytes.HasSuffix(raw, []byte("\n")) {
			break // Being written.
		}
		var l recvLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("record line %s: %v", raw, err)
		}
		ls = append(ls, l)
	}
	return ls
}

// hookStore is where the daemons of a webhook test keep their data: a
// bolt file, or a PostgreSQL schema.
type hookStore struct {
	// open opens the store for the test, while no daemon runs (a daemon
	// holds a bolt file for itself).
	open func(t *testing.T) engine.Store
	// start starts a daemon on it with the socket, the TCP address and
	// the flags extra, and waits until it serves.
	start func(t *testing.T, socket, addr string, extra ...string) *proc
}

// hookStores are the stores the webhook tests run on. PostgreSQL's
// tests are skipped without RESERVE_PG_DSN, and fail without it in CI.
var hookStores = []struct {
	name string
	make func(t *testing.T) hookStore
}{
	{"bolt", func(t *testing.T) hookStore {
		dir := t.TempDir()
		return hookStore{
			open: func(t *testing.T) engine.Store {
				st, err := boltstore.Open(filepath.Join(dir, "reserved.db"), boltstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			start: func(t *testing.T, socket, addr string, extra ...string) *proc {
				return start(t, dir, socket, append([]string{"--listen", addr}, extra...)...)
			},
		}
	}},
	{"postgres", func(t *testing.T) hookStore {
		dsn, _ := pgtest.FreshSchema(t)
		return hookStore{
			open: func(t *testing.T) engine.Store {
				st, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			start: func(t *testing.T, socket, addr string, extra ...string) *proc {
				return startOnPostgres(t, dsn, socket, addr, extra...)
			},
		}
	}},
}

// hooked gives the store workshops, and a webhook endpoint at each path
// of the receiver, which it configures as paths say with the endpoint's
// secret, before any daemon runs. It returns the endpoints by path.
func (s hookStore) hooked(t *testing.T, workshops map[string]engine.WorkshopSpec, r *webhookRecv, paths map[string]recvBehaviour) map[string]engine.WebhookEndpoint {
	t.Helper()
	ctx := context.Background()
	st := s.open(t)
	defer st.Close()
	eng := engine.New(st)
	for id, spec := range workshops {
		if _, _, err := eng.PutWorkshop(ctx, id, spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	endpoints := map[string]engine.WebhookEndpoint{}
	for path, b := range paths {
		w, err := eng.AddWebhook(ctx, engine.Principal{Actor: "root", Admin: true}, r.url+path, nil)
		if err != nil {
			t.Fatalf("add the webhook endpoint %s: %v", path, err)
		}
		b.Secret = w.Secret
		r.configure(t, path, b)
		endpoints[path] = w
	}
	return endpoints
}

// webhookKills is how often TestWebhooksKill9 kills the daemon.
const webhookKills = 4

// hookTimeout and hookLease are the --delivery-timeout and
// --delivery-lease of the daemons that the kill -9 tests run against
// webhookrecv, which answers at once: the claims a killed daemon leaves run
// out after 8 s instead of the default 30 s.
const (
	hookTimeout = 2 * time.Second
	hookLease   = 8 * time.Second
)

// quickDeliveries are the delivery flags of those daemons: retries after
// 50 ms, attempts of hookTimeout at most, and claims of hookLease.
var quickDeliveries = []string{"--delivery-min-backoff", "50ms", "--delivery-timeout", hookTimeout.String(), "--delivery-lease", hookLease.String()}

// TestWebhooksKill9 reserves, cancels, holds, confirms and releases with
// several clients while reserved, delivering every event to a webhook
// endpoint that answers its first requests 500, the next ones 410 and
// then 200, is killed with SIGKILL whenever deliveries are arriving, and
// restarted. Once nothing is pending, every event in the database has
// exactly one delivery: delivered, and received with a 200, or failed
// with the 410 it was refused with. Every request verified, every
// webhook-id the receiver got is an event's, and every request with that
// id carried the same body, the one built from the stored event. As the
// webhook docs say, a 410 fails that one delivery at once and keeps the
// endpoint: it is still there, and events sent after the last 410 were
// delivered to it; and neither a 410 nor a 200 is followed by another
// request with the same webhook-id unless the daemon was killed in
// between (before it could record the answer) and the claim of its
// attempt ran out. It runs on a bolt file and on PostgreSQL, both at once.
func TestWebhooksKill9(t *testing.T) {
	t.Parallel()
	for _, s := range hookStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			testWebhooksKill9(t, s.make(t))
		})
	}
}

func testWebhooksKill9(t *testing.T, s hookStore) {
	rcv := startWebhookRecv(t)
	workshops := map[string]engine.WorkshopSpec{"outbox": {Capacity: 20, MaxQuantity: 2}}
	for i := range holdWorkshops {
		workshops[fmt.Sprintf("hold-%d", i)] = engine.WorkshopSpec{Capacity: holdCapacity, MaxQuantity: 2}
	}
	endpoint := s.hooked(t, workshops, rcv, map[string]recvBehaviour{"/kill": {Fail: 40, Gone: 15}})["/kill"]
	socket := filepath.Join(servertest.ShortTempDir(t), "w.sock")
	addr := freeAddr(t)
	args := append([]string{"--no-demo"}, quickDeliveries...)
	ctx := context.Background()
	p := s.start(t, socket, addr, args...)
	admin := p.socketClient()

	l := newLoad(4)
	for i := range 4 {
		actor := fmt.Sprintf("hooked-%d", i)
		token, err := admin.CreateToken(ctx, actor, false)
		if err != nil {
			t.Fatal(err)
		}
		c := &client.Client{BaseURL: "http://" + addr, Token: token}
		rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))
		if i%2 == 0 {
			l.goClient(func(stop <-chan struct{}, answers, unclear *atomic.Int64) error {
				return reserveAndCancel(c, rng, stop, answers, unclear)
			})
			continue
		}
		hc := &holdClient{actor: actor, c: c, rng: rng}
		l.goClient(hc.run)
	}
	var kills []time.Time // When each killed daemon was gone.
	for kill := range webhookKills {
		l.waitAnswers(t, 10+rand.Int64N(30), fmt.Sprintf("kill %d: answers", kill))
		before := len(rcv.lines(t))
		servertest.Eventually(t, time.Minute, fmt.Sprintf("kill %d: deliveries arriving", kill), func() bool { return len(rcv.lines(t)) > before })
		p = killAndRestart(t, p, func() *proc {
			kills = append(kills, time.Now())
			return s.start(t, socket, addr, args...)
		})
	}
	l.end(t)

	// A count the dispatcher took a second after the last event or later
	// says that nothing is pending, claims of killed daemons included.
	ended := time.Now()
	servertest.Eventually(t, 3*time.Minute, "every delivery delivered or failed", func() bool {
		return time.Since(ended) > delivery.DefaultStatsEvery+time.Second && metric(t, p, "reserved_deliveries_pending") == 0
	})
	failedGauge := metric(t, p, "reserved_deliveries_failed")
	if hooks, err := admin.Webhooks(ctx); err != nil || len(hooks) != 1 || hooks[0].ID != endpoint.ID {
		t.Errorf("after the 410s the endpoints are %+v (%v), want %s kept", hooks, err, endpoint.ID)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}

	events, deliveries := storedDeliveries(t, s)
	byID := map[string][]recvLine{}
	var lastGone time.Time
	for _, l := range rcv.lines(t) {
		if l.Bad != "" || l.Path != "/kill" {
			t.Errorf("the receiver got a request that does not verify, or at a path without an endpoint: %+v", l)
			continue
		}
		byID[l.WebhookID] = append(byID[l.WebhookID], l)
		if l.Status == http.StatusGone {
			lastGone = l.ReceivedAt
		}
	}
	types := map[string]int{}
	delivered, failed, repeated, retried, afterGone := 0, 0, 0, 0, 0
	for _, ev := range events {
		types[engine.WebhookType(ev.Type)]++
		d, ok := deliveries[engine.DeliveryIDOf(ev.ID, endpoint.ID)]
		ls := byID[ev.ID]
		delete(byID, ev.ID)
		if !ok {
			t.Errorf("event %s (%s) has no delivery", ev.ID, ev.Type)
			continue
		}
		body, err := delivery.WebhookBody(ev)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		statuses := map[int]int{}
		for i, l := range ls {
			statuses[l.Status]++
			if l.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("event %s was sent with another body than %s", ev.ID, body)
			}
			if i == 0 {
				continue
			}
			// A 200 or a 410 ends the delivery, unless the daemon died
			// before it recorded the answer: then its claim lasts
			// beyond the attempt's timeout, and only then is the
			// delivery sent again.
			prev := ls[i-1]
			if (prev.Status == http.StatusOK || prev.Status == http.StatusGone) &&
				(l.ReceivedAt.Sub(prev.ReceivedAt) < hookTimeout ||
					!slices.ContainsFunc(kills, func(k time.Time) bool { return k.After(prev.ReceivedAt) && k.Before(l.ReceivedAt) })) {
				t.Errorf("event %s was answered %d at %v and sent again at %v, without a kill whose claim ran out in between",
					ev.ID, prev.Status, prev.ReceivedAt, l.ReceivedAt)
			}
		}
		if len(ls) > 0 && ls[0].ReceivedAt.After(lastGone) && d.State == engine.DeliveryDelivered {
			afterGone++
		}
		switch {
		case d.State == engine.DeliveryDelivered && statuses[http.StatusOK] > 0:
			delivered++
			if statuses[http.StatusOK] > 1 {
				repeated++
			}
		case d.State == engine.DeliveryFailed && statuses[http.StatusGone] > 0 && statuses[http.StatusOK] == 0 && d.LastStatus == http.StatusGone:
			failed++
		default:
			t.Errorf("delivery %+v of event %s: the receiver answered %v", d, ev.Type, statuses)
		}
		if statuses[http.StatusInternalServerError] > 0 {
			retried++
		}
	}
	for id, ls := range byID {
		t.Errorf("the receiver got webhook-id %s, which is no event's (%d requests)", id, len(ls))
	}
	if float64(failed) != failedGauge {
		t.Errorf("reserved_deliveries_failed = %v, the store holds %d failed deliveries", failedGauge, failed)
	}
	if delivered == 0 || failed == 0 || retried == 0 || afterGone == 0 {
		t.Errorf("%d delivered (%d first sent after the last 410), %d failed, %d retried after a 500: nothing was proven of one of them",
			delivered, afterGone, failed, retried)
	}
	t.Logf("%d kills; %d events (%v): %d delivered (%d of them more than once, %d first sent after the last 410), %d failed with a 410, %d retried after a 500; %d unclear answers retried",
		webhookKills, len(events), types, delivered, repeated, afterGone, failed, retried, l.unclear.Load())
}

// TestWebhookLatencyBesideBrokenEndpoints sends the events of 50
// reservations to three endpoints: one that always answers 500, one that
// never answers, and a healthy one, and measures how long each event
// took from its commit to its receipt at the healthy one. It asserts
// only that every event arrives there; the latencies are logged
// (docs/webhooks.md quotes them). It runs on a bolt file and on
// PostgreSQL.
func TestWebhookLatencyBesideBrokenEndpoints(t *testing.T) {
	for _, s := range hookStores {
		t.Run(s.name, func(t *testing.T) { testWebhookLatency(t, s.make(t)) })
	}
}

func testWebhookLatency(t *testing.T, s hookStore) {
	rcv := startWebhookRecv(t)
	s.hooked(t, map[string]engine.WorkshopSpec{"latency": {Capacity: 1000, MaxQuantity: 1}}, rcv,
		map[string]recvBehaviour{"/fail": {Mode: "fail"}, "/hang": {Mode: "hang"}, "/ok": {}})
	p := s.start(t, filepath.Join(servertest.ShortTempDir(t), "l.sock"), freeAddr(t), "--no-demo")
	admin := p.socketClient()
	ctx := context.Background()
	const reservations = 50
	for range reservations {
		status, body, _, err := admin.Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "latency", Quantity: 1})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("reserve: %d %s %v", status, body, err)
		}
	}
	var latencies []time.Duration
	servertest.Eventually(t, 2*time.Minute, "every event at the healthy endpoint", func() bool {
		latencies = latencies[:0]
		seen := map[string]bool{}
		for _, l := range rcv.lines(t) {
			if l.Path == "/ok" && l.Status == http.StatusOK && !seen[l.WebhookID] {
				seen[l.WebhookID] = true
				latencies = append(latencies, l.ReceivedAt.Sub(l.EventTime))
			}
		}
		return len(latencies) == reservations
	})
	slices.Sort(latencies)
	paths := map[string]int{}
	for _, l := range rcv.lines(t) {
		if l.Bad != "" {
			t.Errorf("a request does not verify: %+v", l)
		}
		paths[l.Path]++
	}
	t.Logf("healthy endpoint, %d events: p50 %v, p95 %v, max %v; requests by path %v", reservations,
		latencies[len(latencies)/2], latencies[len(latencies)*95/100], latencies[len(latencies)-1], paths)
}
