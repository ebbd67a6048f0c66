package daemon_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/mail/mailtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestDeliveriesKilledMidAttempt kills reserved with SIGKILL while it
// sends a reservation's confirmation mail and its webhook: the mail
// server has stored the mail and holds its reply (smtpsink --stall), the
// endpoint has the request and gives no answer (webhookrecv's "hang"),
// so the daemon dies after both were sent and before it learned so. The
// store then shows both deliveries claimed and nothing recorded of
// them. Once restarted, the daemon sends both again when their claims
// run out: the same mail, byte for byte, under the same Message-ID, and
// the same webhook-id with the same body, the one built from the stored
// event; both are then delivered, after two attempts. It runs on a bolt
// file and on PostgreSQL, both at once: each waits for its claims to run
// out most of its time.
func TestDeliveriesKilledMidAttempt(t *testing.T) {
	t.Parallel()
	for _, s := range hookStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			testDeliveriesKilledMidAttempt(t, s.make(t))
		})
	}
}

func testDeliveriesKilledMidAttempt(t *testing.T, s hookStore) {
	ctx := context.Background()
	rcv := startWebhookRecv(t)
	sink := mailtest.Start(t, "--stall", "1")
	starts := time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)
	workshops := map[string]engine.WorkshopSpec{"kiln": {Capacity: 5, MaxQuantity: 1, Title: "Kiln", Schedule: engine.Schedule{
		Location: "Studio 3", StartsAt: starts, EndsAt: starts.Add(2 * time.Hour), TimeZone: "Europe/Berlin"}}}
	endpoint := s.hooked(t, workshops, rcv, map[string]recvBehaviour{"/hook": {Mode: "hang"}})["/hook"]
	st := s.open(t)
	err := engine.New(st).KeepVerifiedEmail(ctx, "ada", "ada@example.org")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	socket := filepath.Join(servertest.ShortTempDir(t), "k.sock")
	addr := freeAddr(t)
	// An attempt may take 10 s before it counts as failed: far longer
	// than the test takes to see both requests arrive and kill.
	const lease = 16 * time.Second
	args := []string{"--no-demo", "--smtp", "smtp://" + sink.Addr, "--mail-from", "Reserve <reserve@example.org>",
		"--delivery-timeout", "10s", "--delivery-lease", lease.String()}
	p := s.start(t, socket, addr, args...)
	token, err := p.socketClient().CreateToken(ctx, "ada", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&client.Client{BaseURL: "http://" + addr, Token: token}).Send(ctx, engine.OperationKey(uuid.NewString()),
		client.Reserving(engine.Request{Workshop: "kiln", Quantity: 1}))
	if err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve: %+v, %v", res, err)
	}

	first := sink.Wait(t, 1)[0]
	servertest.Eventually(t, time.Minute, "the webhook request at the endpoint", func() bool { return len(rcv.lines(t)) > 0 })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	events, deliveries := storedDeliveries(t, s)
	if len(events) != 1 || events[0].Type != engine.EventReserved {
		t.Fatalf("events %+v, want the one reservation's", events)
	}
	ev := events[0]
	mailID, hookID := engine.DeliveryIDOf(ev.ID, engine.ChannelMail), engine.DeliveryIDOf(ev.ID, endpoint.ID)
	for _, id := range []string{mailID, hookID} {
		d := deliveries[id]
		if d.State != engine.DeliveryPending || d.Attempts != 1 || d.LastStatus != 0 || d.LastError != "" {
			t.Fatalf("after the kill, delivery %s is %+v: want it pending, claimed once, with nothing recorded of its attempt", id, d)
		}
	}

	rcv.configure(t, "/hook", recvBehaviour{Secret: endpoint.Secret}) // Answers 200 from now on.
	p = s.start(t, socket, addr, args...)
	msgs := sink.Wait(t, 2)
	servertest.Eventually(t, 2*lease, "both deliveries delivered", func() bool {
		page, err := p.socketClient().Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryDelivered})
		return err == nil && len(page.Deliveries) == 2
	})
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}

	if len(msgs) != 2 || !bytes.Equal(msgs[1], first) {
		t.Errorf("the mail sent again differs from the one the killed daemon sent:\n%s\n---\n%s", first, msgs[len(msgs)-1])
	}
	for _, raw := range msgs {
		if id := mailtest.Parse(t, raw).Header.Get("Message-ID"); id != "<"+ev.ID+".mail@example.org>" {
			t.Errorf("Message-ID %q, want the one made from event %s", id, ev.ID)
		}
	}
	body, err := delivery.WebhookBody(ev)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	lines := rcv.lines(t)
	if len(lines) != 2 {
		t.Fatalf("the endpoint got %d requests, want the killed daemon's and the one sent again: %+v", len(lines), lines)
	}
	for i, l := range lines {
		if l.Bad != "" || l.WebhookID != ev.ID || l.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("request %d: %+v; want webhook-id %s and the body %s", i, l, ev.ID, body)
		}
	}
	if lines[1].Status != http.StatusOK {
		t.Errorf("the request sent again was answered %d", lines[1].Status)
	}
	_, deliveries = storedDeliveries(t, s)
	for _, id := range []string{mailID, hookID} {
		if d := deliveries[id]; d.State != engine.DeliveryDelivered || d.Attempts != 2 {
			t.Errorf("delivery %s is %+v: want it delivered after two attempts", id, d)
		}
	}
}

// storedDeliveries returns the events and the deliveries (by id) in the
// store, while no daemon runs.
func storedDeliveries(t *testing.T, s hookStore) ([]engine.Event, map[string]engine.Delivery) {
	t.Helper()
	st := s.open(t)
	defer st.Close()
	var events []engine.Event
	deliveries := map[string]engine.Delivery{}
	err := st.View(context.Background(), func(tx engine.Tx) error {
		if err := tx.ForEachEvent(func(ev engine.Event) error { events = append(events, ev); return nil }); err != nil {
			return err
		}
		for _, state := range engine.DeliveryStates {
			err := tx.ForEachDeliveryIn(state, "", func(d engine.Delivery) error { deliveries[d.ID] = d; return nil })
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return events, deliveries
}
