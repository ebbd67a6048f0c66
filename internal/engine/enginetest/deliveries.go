package enginetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// This file holds the conformance tests of hold events, webhook endpoints,
// the routing of events to deliveries, and the deliveries' life.

var admin = engine.Principal{Actor: "root", Admin: true}

// deliveries returns every delivery in state, in id order.
func (h *harness) deliveries(state engine.DeliveryState) []engine.Delivery {
	h.t.Helper()
	var ds []engine.Delivery
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		ds = ds[:0]
		return tx.ForEachDeliveryIn(state, "", func(d engine.Delivery) error { ds = append(ds, d); return nil })
	})
	if err != nil {
		h.t.Fatalf("deliveries: %v", err)
	}
	return ds
}

func (h *harness) mustAddWebhook(url string, types ...string) engine.WebhookEndpoint {
	h.t.Helper()
	w, err := h.eng.AddWebhook(h.ctx, admin, url, types)
	if err != nil {
		h.t.Fatalf("AddWebhook(%s): %v", url, err)
	}
	return w
}

func (h *harness) mustRoute() int {
	h.t.Helper()
	n, more, err := h.eng.RouteEvents(h.ctx, 1000, engine.RouteOptions{Mail: true})
	if err != nil || more {
		h.t.Fatalf("RouteEvents = %d, more %v, %v", n, more, err)
	}
	return n
}

func testHoldEvents(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	confirmed := h.mustHold(alice, "kiln", 2).Answer.HoldID
	released := h.mustHold(alice, "kiln", 1).Answer.HoldID
	expired := h.mustHold(bob, "kiln", 1).Answer.HoldID
	res := h.mustSettle(engine.OperationConfirm, alice, newKey(), confirmed).Answer.ReservationID
	h.mustSettle(engine.OperationRelease, alice, newKey(), released)
	h.advance(ttl * time.Second)
	if n, _, err := h.eng.ExpireHolds(h.ctx, 10); err != nil || n != 1 {
		t.Fatalf("ExpireHolds = %d, %v", n, err)
	}
	want := map[string]struct {
		hold, reservation, owner string
		quantity                 int
	}{}
	add := func(typ, hold, reservation, owner string, q int) {
		want[typ+" "+hold] = struct {
			hold, reservation, owner string
			quantity                 int
		}{hold, reservation, owner, q}
	}
	add(engine.EventHoldCreated, confirmed, "", "alice", 2)
	add(engine.EventHoldCreated, released, "", "alice", 1)
	add(engine.EventHoldCreated, expired, "", "bob", 1)
	add(engine.EventHoldConfirmed, confirmed, res, "alice", 2)
	add(engine.EventHoldReleased, released, "", "alice", 1)
	add(engine.EventHoldExpired, expired, "", "bob", 1)
	reservations := 0
	for _, ev := range h.events() {
		if ev.Type == engine.EventReserved {
			reservations++
			continue
		}
		w, ok := want[ev.Type+" "+ev.HoldID]
		if !ok {
			t.Errorf("unexpected event %+v", ev)
			continue
		}
		delete(want, ev.Type+" "+ev.HoldID)
		if ev.ReservationID != w.reservation || ev.Owner != w.owner || ev.Quantity != w.quantity || ev.Workshop != "kiln" {
			t.Errorf("event %+v, want %+v", ev, w)
		}
		if ev.Type == engine.EventHoldExpired && ev.OperationKey != "" {
			t.Errorf("expiry event names key %s; nobody asked for it", ev.OperationKey)
		}
	}
	if len(want) != 0 || reservations != 1 {
		t.Errorf("missing events %v; %d reservation events, want 1", want, reservations)
	}
	// The simple channels see the reservation event only.
	pending, err := h.eng.PendingEvents(h.ctx, 100)
	if err != nil || len(pending) != 1 || pending[0].Type != engine.EventReserved {
		t.Fatalf("PendingEvents = %+v, %v; want the one reservation event", pending, err)
	}
}

func testWebhookEndpoints(t *testing.T, h *harness) {
	all := h.mustAddWebhook("https://hooks.example.org/all")
	some := h.mustAddWebhook("http://127.0.0.1:9/some", engine.WebhookReservationCancelled, engine.WebhookHoldExpired)
	if !strings.HasPrefix(all.Secret, engine.WebhookSecretPrefix) || len(all.Secret) < len(engine.WebhookSecretPrefix)+32 || all.Secret == some.Secret {
		t.Fatalf("secrets %q, %q", all.Secret, some.Secret)
	}
	for _, same := range []string{all.URL, "https://HOOKS.example.org/all", "https://hooks.example.org:443/all", "https://hooks.example.org./all"} {
		if _, err := h.eng.AddWebhook(h.ctx, admin, same, nil); engine.ErrorCode(err) != engine.CodeWebhookExists || !strings.Contains(err.Error(), all.ID) {
			t.Fatalf("adding %s beside %s: %v, want %s naming %s", same, all.URL, err, engine.CodeWebhookExists, all.ID)
		}
	}
	for _, bad := range []struct {
		url   string
		types []string
	}{
		{"", nil}, {"ftp://x.org/", nil}, {"http://hooks.example.org/", nil}, {"https://u:p@x.org/", nil},
		{"https://x.org/#f", nil}, {"/relative", nil}, {"https://x.org/" + strings.Repeat("a", engine.MaxWebhookURLLen), nil},
		{"https://x.org/a", []string{"reservation.confirmed"}}, {"https://x.org/b", []string{"hold.created", "hold.created"}},
		{"https://x.org:99999/", nil}, {"https://x.org:0/", nil},
	} {
		if _, err := h.eng.AddWebhook(h.ctx, admin, bad.url, bad.types); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("AddWebhook(%q, %v) = %v, want %s", bad.url, bad.types, err, engine.CodeRequestContract)
		}
	}
	if _, err := h.eng.AddWebhook(h.ctx, alice, "https://x.org/c", nil); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("AddWebhook by a person: %v", err)
	}
	list, err := h.eng.Webhooks(h.ctx, admin)
	if err != nil || len(list) != 2 || list[0].ID != all.ID || list[1].ID != some.ID {
		t.Fatalf("Webhooks = %+v, %v", list, err)
	}
	for _, w := range list {
		if w.Secret != "" {
			t.Fatalf("a listed endpoint shows its secret: %+v", w)
		}
	}
	if !slices.Equal(list[1].EventTypes, []string{engine.WebhookReservationCancelled, engine.WebhookHoldExpired}) || len(list[0].EventTypes) != 0 {
		t.Fatalf("event types %v, %v", list[0].EventTypes, list[1].EventTypes)
	}
	if err := h.eng.RemoveWebhook(h.ctx, admin, "nope"); engine.ErrorCode(err) != engine.CodeUnknownWebhook {
		t.Fatalf("removing an unknown endpoint: %v", err)
	}
	if err := h.eng.RemoveWebhook(h.ctx, admin, some.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := h.eng.Webhooks(h.ctx, admin); len(list) != 1 {
		t.Fatalf("after removal: %+v", list)
	}
	// The URL is free again, with a new secret.
	if again := h.mustAddWebhook(some.URL); again.Secret == some.Secret || again.ID == some.ID {
		t.Fatalf("added again: %+v", again)
	}
}

func testRouting(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	all := h.mustAddWebhook("https://hooks.example.org/all")
	cancels := h.mustAddWebhook("https://hooks.example.org/cancels", engine.WebhookReservationCancelled)
	if err := h.eng.KeepVerifiedEmail(h.ctx, "alice", "Alice@Example.org"); err != nil {
		t.Fatal(err)
	}
	a := h.mustReserve("alice", newKey(), "kiln", 2)
	h.mustReserve("bob", newKey(), "kiln", 1) // No address: webhooks only.
	h.mustCancel(alice, newKey(), a.Answer.ReservationID)
	if n := h.mustRoute(); n != 3 {
		t.Fatalf("routed %d events, want 3", n)
	}
	if n := h.mustRoute(); n != 0 {
		t.Fatalf("routed %d events again", n)
	}
	got := map[string]int{}
	for _, d := range h.deliveries(engine.DeliveryPending) {
		got[d.EventType+" "+d.Channel+" "+d.Endpoint+d.Recipient]++
		if d.ID != engine.DeliveryIDOf(d.EventID, cmpOr(d.Endpoint, engine.ChannelMail)) || d.Attempts != 0 || d.NextAttemptAt.IsZero() || !d.Since.Equal(d.CreatedAt) {
			t.Errorf("delivery %+v", d)
		}
	}
	want := map[string]int{
		engine.EventReserved + " webhook " + all.ID:       2,
		engine.EventReserved + " mail alice@example.org":  1,
		engine.EventCancelled + " webhook " + all.ID:      1,
		engine.EventCancelled + " webhook " + cancels.ID:  1,
		engine.EventCancelled + " mail alice@example.org": 1,
	}
	if !mapsEqual(got, want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	// An endpoint added later gets only later events, also within the
	// same second.
	h.advance(time.Millisecond)
	late := h.mustAddWebhook("https://hooks.example.org/late")
	h.mustReserve("carol", newKey(), "kiln", 1)
	h.mustRoute()
	n := 0
	for _, d := range h.deliveries(engine.DeliveryPending) {
		if d.Endpoint == late.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the late endpoint got %d deliveries, want 1", n)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func testClaimAndFinish(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	h.mustAddWebhook("https://hooks.example.org/all")
	for range 3 {
		h.mustReserve("alice", newKey(), "kiln", 1)
	}
	h.mustRoute()
	jobs, err := h.eng.ClaimDueDeliveries(h.ctx, 2, time.Minute)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("ClaimDueDeliveries = %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Delivery.Attempts != 1 || !j.EndpointFound || j.Endpoint.Secret == "" || j.Event.ID != j.Delivery.EventID || !j.WorkshopFound {
			t.Fatalf("job %+v", j)
		}
	}
	third, err := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute)
	if err != nil || len(third) != 1 {
		t.Fatalf("second claim = %d jobs, %v; want the one left", len(third), err)
	}
	if none, _ := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute); len(none) != 0 {
		t.Fatalf("claimed deliveries were claimed again within their lease: %d", len(none))
	}
	// Delivered, and retried later.
	if err := h.eng.FinishDelivery(h.ctx, jobs[0].Delivery, engine.Attempt{State: engine.DeliveryDelivered, Status: 204}); err != nil {
		t.Fatal(err)
	}
	retryAt := h.now().Add(10 * time.Second).Truncate(time.Microsecond)
	if err := h.eng.FinishDelivery(h.ctx, jobs[1].Delivery, engine.Attempt{State: engine.DeliveryPending, NextAttemptAt: retryAt, Status: 503, Error: "HTTP 503"}); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.FinishDelivery(h.ctx, third[0].Delivery, engine.Attempt{State: engine.DeliveryFailed, Status: 410, Error: "HTTP 410 Gone"}); err != nil {
		t.Fatal(err)
	}
	if d := h.deliveries(engine.DeliveryDelivered); len(d) != 1 || d[0].ID != jobs[0].Delivery.ID || d[0].LastStatus != 204 || d[0].DoneAt.IsZero() {
		t.Fatalf("delivered: %+v", d)
	}
	if d := h.deliveries(engine.DeliveryFailed); len(d) != 1 || d[0].LastError != "HTTP 410 Gone" {
		t.Fatalf("failed: %+v", d)
	}
	// A stale claim changes nothing: the delivery was claimed again
	// after its lease.
	h.advance(10 * time.Second)
	again, err := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute)
	if err != nil || len(again) != 1 || again[0].Delivery.ID != jobs[1].Delivery.ID || again[0].Delivery.Attempts != 2 {
		t.Fatalf("claim after the retry time = %+v, %v", again, err)
	}
	if err := h.eng.FinishDelivery(h.ctx, jobs[1].Delivery, engine.Attempt{State: engine.DeliveryDelivered}); err != nil {
		t.Fatal(err)
	}
	if d := h.deliveries(engine.DeliveryPending); len(d) != 1 || d[0].Attempts != 2 {
		t.Fatalf("a stale claim finished the delivery: %+v", d)
	}
	stats, err := h.eng.CountDeliveries(h.ctx)
	if err != nil || stats.Pending != 1 || stats.Failed != 1 || stats.OldestPending.IsZero() {
		t.Fatalf("CountDeliveries = %+v, %v", stats, err)
	}
	// A claim whose sender vanished is sent again once its lease ran out.
	h.advance(2 * time.Minute)
	if j, _ := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute); len(j) != 1 || j[0].Delivery.Attempts != 3 {
		t.Fatalf("claim after the lease = %+v", j)
	}
}

func testRetryAndSkipDeliveries(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	h.mustAddWebhook("https://hooks.example.org/all")
	h.mustReserve("alice", newKey(), "kiln", 2)
	h.mustReserve("alice", newKey(), "kiln", 1)
	h.mustRoute()
	ds := h.deliveries(engine.DeliveryPending)
	if len(ds) != 2 {
		t.Fatalf("%d deliveries", len(ds))
	}
	skipKey := newKey()
	out, err := h.eng.SkipDelivery(h.ctx, admin, skipKey, ds[0].ID)
	if err != nil || out.Answer.Status != engine.StatusSkipped || out.Answer.DeliveryID != ds[0].ID || out.Answer.Workshop != "kiln" || out.Answer.Quantity != 2 {
		t.Fatalf("SkipDelivery = %+v, %v", out, err)
	}
	replay, err := h.eng.SkipDelivery(h.ctx, admin, skipKey, ds[0].ID)
	if err != nil || !replay.Replayed || string(replay.Answer.JSON()) != string(out.Answer.JSON()) {
		t.Fatalf("replayed skip = %+v, %v", replay, err)
	}
	if _, err := h.eng.SkipDelivery(h.ctx, admin, skipKey, ds[1].ID); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Fatalf("the key for another delivery: %v", err)
	}
	if _, err := h.eng.RetryDelivery(h.ctx, admin, skipKey, ds[0].ID); engine.ErrorCode(err) != engine.CodeOperationConflict {
		t.Fatalf("the key for a retry: %v", err)
	}
	if o, _ := h.eng.SkipDelivery(h.ctx, admin, newKey(), ds[0].ID); o.Answer.Status != engine.StatusAlreadySkipped {
		t.Fatalf("skipping again: %+v", o)
	}
	if got := h.deliveries(engine.DeliverySkipped); len(got) != 1 || got[0].ID != ds[0].ID {
		t.Fatalf("skipped: %+v", got)
	}
	if j, _ := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute); len(j) != 1 || j[0].Delivery.ID != ds[1].ID {
		t.Fatalf("a skipped delivery was claimed: %+v", j)
	} else if err := h.eng.FinishDelivery(h.ctx, j[0].Delivery, engine.Attempt{State: engine.DeliveryDelivered, Status: 200}); err != nil {
		t.Fatal(err)
	}
	if o, _ := h.eng.SkipDelivery(h.ctx, admin, newKey(), ds[1].ID); o.Answer.Status != engine.StatusAlreadyDelivered {
		t.Fatalf("skipping a delivered one: %+v", o)
	}
	// Sending again: the skipped one and the delivered one, both due now,
	// their retries counted from now.
	h.advance(time.Hour)
	for _, d := range ds {
		key := newKey()
		out, err := h.eng.RetryDelivery(h.ctx, admin, key, d.ID)
		if err != nil || out.Answer.Status != engine.StatusRequeued || out.Answer.DeliveryID != d.ID {
			t.Fatalf("RetryDelivery(%s) = %+v, %v", d.ID, out, err)
		}
		if r, _ := h.eng.RetryDelivery(h.ctx, admin, key, d.ID); !r.Replayed {
			t.Fatalf("a repeated retry was not replayed: %+v", r)
		}
	}
	pending := h.deliveries(engine.DeliveryPending)
	if len(pending) != 2 {
		t.Fatalf("pending after the retries: %+v", pending)
	}
	for _, d := range pending {
		if d.Attempts != 0 {
			t.Fatalf("requeued delivery %+v counts its earlier attempts; its backoff would start long", d)
		}
		if !d.Since.Equal(h.now().Truncate(time.Microsecond)) || d.NextAttemptAt.After(h.now()) {
			t.Fatalf("requeued delivery %+v: since and due should be now (%s)", d, h.now())
		}
	}
	// Refusals store nothing.
	h.wantNoReceiptFor(t, "root", func(key engine.OperationKey) error {
		_, err := h.eng.RetryDelivery(h.ctx, admin, key, "no-such-delivery")
		return err
	}, engine.CodeUnknownDelivery)
	if _, err := h.eng.SkipDelivery(h.ctx, alice, newKey(), ds[0].ID); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("a person skipping: %v", err)
	}
	page, err := h.eng.Deliveries(h.ctx, admin, engine.DeliveryFilter{State: engine.DeliveryPending, Limit: 1})
	if err != nil || len(page.Deliveries) != 1 || page.Next == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	next, err := h.eng.Deliveries(h.ctx, admin, engine.DeliveryFilter{State: engine.DeliveryPending, Limit: 1, After: page.Next})
	if err != nil || len(next.Deliveries) != 1 || next.Next != "" || next.Deliveries[0].ID == page.Deliveries[0].ID {
		t.Fatalf("second page: %+v, %v", next, err)
	}
	if p, _ := h.eng.Deliveries(h.ctx, admin, engine.DeliveryFilter{State: engine.DeliveryPending, Channel: engine.ChannelMail}); len(p.Deliveries) != 0 {
		t.Fatalf("mail deliveries: %+v", p)
	}
	for _, bad := range []engine.DeliveryFilter{{State: "lost"}, {After: "x\x00"}, {Endpoint: "nope"}} {
		if _, err := h.eng.Deliveries(h.ctx, admin, bad); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Fatalf("Deliveries(%+v) = %v, want %s", bad, err, engine.CodeRequestContract)
		}
	}
	for _, id := range []string{"", "x\x00", ds[0].EventID, ds[0].ID + "x"} {
		if _, err := h.eng.SkipDelivery(h.ctx, admin, newKey(), id); engine.ErrorCode(err) != engine.CodeUnknownDelivery {
			t.Fatalf("SkipDelivery(%q) = %v, want %s", id, err, engine.CodeUnknownDelivery)
		}
	}
	if _, err := h.eng.Deliveries(h.ctx, alice, engine.DeliveryFilter{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Fatalf("a person's delivery view: %v", err)
	}
}

// wantNoReceiptFor runs op with a fresh key of actor and checks that it
// is refused with code and stores no receipt under that key.
func (h *harness) wantNoReceiptFor(t *testing.T, actor string, op func(engine.OperationKey) error, code string) {
	t.Helper()
	key := newKey()
	err := op(key)
	if engine.ErrorCode(err) != code {
		t.Fatalf("refusal: %v, want %s", err, code)
	}
	var stored bool
	_ = h.store.View(h.ctx, func(tx engine.Tx) error {
		_, stored, _ = tx.Receipt(actor, key)
		return nil
	})
	if stored {
		t.Fatalf("a refused operation stored a receipt")
	}
}

func testCheckFindsBrokenDeliveries(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	h.mustAddWebhook("https://hooks.example.org/all")
	h.mustReserve("alice", newKey(), "kiln", 1)
	h.mustRoute()
	h.wantFindings("routed", nil)
	good := h.deliveries(engine.DeliveryPending)[0]
	put := func(d engine.Delivery) {
		t.Helper()
		if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.PutDelivery(d) }); err != nil {
			t.Fatal(err)
		}
	}
	orphan := good
	orphan.EventID = "ffffffffffffffffffffffffffffffff"
	orphan.ID = engine.DeliveryIDOf(orphan.EventID, orphan.Endpoint)
	put(orphan)
	h.wantFindings("a delivery of no event", []string{engine.FindingDelivery})
	orphan.EventID = good.EventID
	put(orphan)
	h.wantFindings("a delivery under another id", []string{engine.FindingDelivery})
	orphan.EventID, orphan.State, orphan.DoneAt = "ffffffffffffffffffffffffffffffff", engine.DeliveryDelivered, h.now()
	put(orphan)
	h.wantFindings("a delivered delivery of no event", []string{engine.FindingDelivery})
	undated := good
	undated.State, undated.NextAttemptAt = engine.DeliveryFailed, time.Time{}
	put(undated)
	h.wantFindings("a failed delivery without its time", []string{engine.FindingDelivery, engine.FindingDelivery})
}

// testClaimSkipsADeliveryWithoutItsEvent: a delivery whose event is gone
// fails when it is claimed, and the deliveries claimed with it are sent.
func testClaimSkipsADeliveryWithoutItsEvent(t *testing.T, h *harness) {
	h.workshop("kiln", 5, 5)
	h.mustAddWebhook("https://hooks.example.org/all")
	h.mustReserve("alice", newKey(), "kiln", 1)
	h.mustRoute()
	good := h.deliveries(engine.DeliveryPending)[0]
	orphan := good
	orphan.EventID = "00000000000000000000000000000000" // Sorts, and is due, first.
	orphan.ID = engine.DeliveryIDOf(orphan.EventID, orphan.Endpoint)
	if err := h.store.Update(h.ctx, func(tx engine.Tx) error { return tx.PutDelivery(orphan) }); err != nil {
		t.Fatal(err)
	}
	jobs, err := h.eng.ClaimDueDeliveries(h.ctx, 10, time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].Delivery.ID != good.ID {
		t.Fatalf("ClaimDueDeliveries = %+v, %v; want the one delivery with an event", jobs, err)
	}
	if failed := h.deliveries(engine.DeliveryFailed); len(failed) != 1 || failed[0].ID != orphan.ID || !strings.Contains(failed[0].LastError, "does not exist") {
		t.Fatalf("failed deliveries: %+v", failed)
	}
	h.wantFindings("a delivery of no event", []string{engine.FindingDelivery})
}
