package daemon_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/chaos"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/server/servertest"
)

// failpointBuild builds reserved with reserve's failpoints and bbolt's
// once per test binary, into the directory of reservedBin, which TestMain
// removes when the tests end.
var failpointBuild = sync.OnceValues(func() (chaos.Binaries, error) {
	parent := os.TempDir()
	if reservedBin != "" {
		parent = filepath.Dir(reservedBin)
	}
	dir, err := os.MkdirTemp(parent, "reserved-failpoint-")
	if err != nil {
		return chaos.Binaries{}, err
	}
	return chaos.Build(filepath.Join("..", ".."), dir)
})

// armFailpoint arms the failpoint point of a failpoint build that serves
// GOFAIL_HTTP at addr with the gofail term, e.g. `return("kill")`.
func armFailpoint(t *testing.T, addr, point, term string) {
	t.Helper()
	putNoContent(t, "http://"+addr+"/"+point, strings.NewReader(term), "arm "+point)
}

// putNoContent PUTs body to url, and fails t, saying what it did, unless
// the answer is 204 No Content.
func putNoContent(t *testing.T, url string, body io.Reader, what string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%s: %s", what, resp.Status)
	}
}

// TestWaitlistOfferSurvivesKill9 kills reserved with SIGKILL between a
// cancellation that frees the place of a full workshop with two people
// waiting and everything after it: inside the commit of the decision
// (bbolt's failpoints after the data pages and after the meta page were
// written, before each is synced), after the commit and before the
// answer, and after the answer while the offer's webhook is refused. The
// person who cancelled sends the cancellation again with the same key
// until it is answered. Afterwards exactly one offer exists, to the first
// person waiting; the second waits at position 1; `reserved check` finds
// nothing; and the webhook endpoint gets the offer's event under one id.
func TestWaitlistOfferSurvivesKill9(t *testing.T) {
	t.Parallel()
	bin, err := failpointBuild()
	if err != nil {
		t.Fatalf("build reserved with failpoints: %v", err)
	}
	for _, point := range []string{chaos.BoltBeforeSyncData, chaos.BoltBeforeSyncMeta, failpoint.ServerAfterCommit, "after the answer"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			testOfferSurvivesKill9(t, bin.Reserved, point)
		})
	}
}

func testOfferSurvivesKill9(t *testing.T, bin, point string) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "reserved.db")
	rcv := startWebhookRecv(t)

	// A full workshop, bob and carol waiting, and a webhook endpoint
	// whose first deliveries are refused, written while no daemon runs.
	// Every event so far is routed, so the daemon's first write is the
	// cancellation's.
	st, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(st)
	if _, _, err := eng.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 1, OfferTTLSeconds: 3600}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Reserve(ctx, "alice", newOpKey(), engine.Request{Workshop: "kiln", Quantity: 1})
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("alice reserves: %+v, %v", res, err)
	}
	var entries []string
	for _, who := range []string{"bob", "carol"} {
		out, err := eng.Reserve(ctx, who, newOpKey(), engine.Request{Workshop: "kiln", Quantity: 1, Waitlist: true})
		if err != nil || out.Answer.Status != engine.StatusWaiting {
			t.Fatalf("%s joins: %+v, %v", who, out, err)
		}
		entries = append(entries, out.Answer.EntryID)
	}
	for more := true; more; {
		if _, more, err = eng.RouteEvents(ctx, 100, engine.RouteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	endpoint, err := eng.AddWebhook(ctx, engine.Principal{Actor: "root", Admin: true}, rcv.url+"/offers", nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv.configure(t, "/offers", recvBehaviour{Secret: endpoint.Secret, Fail: 2})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	socket := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	args := serveArgs(dir, socket, append([]string{"--no-demo"}, quickDeliveries...)...)
	launchWith := func(extra ...string) *proc {
		p := launchProgram(t, env(dir, extra...), bin, args...)
		p.socket = socket
		p.waitServing(t)
		return p
	}
	var p *proc
	switch point {
	case chaos.BoltBeforeSyncData, chaos.BoltBeforeSyncMeta:
		// Armed once the daemon serves and writes nothing (its opening
		// and its login link are commits too), so that the first commit
		// it meets is the cancellation's.
		fail := freeAddr(t)
		p = launchWith("GOFAIL_HTTP=" + fail)
		armFailpoint(t, fail, point, "panic")
	case failpoint.ServerAfterCommit:
		p = launchWith("GOFAIL_FAILPOINTS=" + point + `=return("kill")`)
	default:
		p = launchWith()
	}
	admin := p.socketClient()
	key := newOpKey()
	cancel := client.Cancelling(res.Answer.ReservationID)
	sendCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	first, err := admin.Send(sendCtx, key, cancel)
	stop()
	if point == "after the answer" {
		if err != nil || first.Answer.Status != engine.StatusCancelled {
			t.Fatalf("cancel: %+v, %v", first, err)
		}
		// Killed while the endpoint refuses the offer's first delivery.
		servertest.Eventually(t, time.Minute, "the offer's first delivery refused", func() bool {
			for _, l := range rcv.lines(t) {
				if l.Type == engine.EventWaitlistOffered {
					return true
				}
			}
			return false
		})
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	} else if err == nil && first.Decided {
		t.Fatalf("the cancellation was answered (%+v) although reserved was to die at %s", first, point)
	}
	<-p.done
	if point != "after the answer" && !strings.Contains(p.logs.String(), point) && !strings.Contains(p.logs.String(), "panic") {
		t.Fatalf("reserved did not die at %s:\n%s", point, p.logs)
	}

	p = launchWith()
	admin = p.socketClient()
	var again client.Result
	servertest.Eventually(t, time.Minute, "the cancellation answered", func() bool {
		again, err = admin.Send(ctx, key, cancel)
		return err == nil && again.Decided
	})
	if again.Answer.Status != engine.StatusCancelled {
		t.Fatalf("the cancellation sent again: %+v", again)
	}
	page, err := p.socketClient().WorkshopWaitlist(ctx, "kiln", engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	list := page.Entries
	if len(list) != 2 || list[0].ID != entries[0] || list[0].State != engine.WaitOffered || list[1].State != engine.WaitWaiting || list[1].Position != 1 {
		t.Fatalf("the waiting list after the crash: %+v", list)
	}
	offer := list[0].HoldID
	servertest.Eventually(t, time.Minute, "the offer's webhook delivered", func() bool {
		for _, l := range rcv.lines(t) {
			if l.Type == engine.EventWaitlistOffered && l.Status == 200 {
				return true
			}
		}
		return false
	})
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}

	st, err = boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	offers := 0
	offerEvents := map[string]bool{}
	err = st.View(ctx, func(tx engine.Tx) error {
		if err := tx.ForEachHold(func(h engine.Hold) error {
			if h.WaitEntry != "" {
				offers++
				if h.ID != offer || h.WaitEntry != entries[0] || h.Actor != "bob" {
					t.Errorf("offer %+v, want hold %s for bob's entry %s", h, offer, entries[0])
				}
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.ForEachEvent(func(ev engine.Event) error {
			if ev.Type == engine.EventWaitlistOffered {
				offerEvents[ev.ID] = true
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if offers != 1 || len(offerEvents) != 1 {
		t.Fatalf("%d offers and %d offer events after the crash, want exactly one of each", offers, len(offerEvents))
	}
	for _, l := range rcv.lines(t) {
		if l.Bad != "" {
			t.Errorf("the receiver got a request that does not verify: %+v", l)
		}
		if l.Type == engine.EventWaitlistOffered && !offerEvents[l.WebhookID] {
			t.Errorf("the receiver got an offer under id %s, which is not the offer's event", l.WebhookID)
		}
	}
	findings, err := engine.Check(ctx, st)
	if err != nil || len(findings) != 0 {
		t.Fatalf("check: %v, %v", findings, err)
	}
}

func newOpKey() engine.OperationKey { return engine.OperationKey(uuid.NewString()) }
