// Package enginetest is the conformance suite of engine.Store: it runs the
// whole reservation contract of package engine against a store, so every
// store (bbolt, and any later one) proves the same behaviour with the same
// tests. A store's own tests call Run.
package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/faults"
)

// NewStore opens a fresh, empty store for one test and arranges for it to be
// closed when the test ends.
type NewStore func(t testing.TB) engine.Store

// Now is the fixed clock of the suite.
var Now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"FirstEffect", testFirstEffect},
		{"ReplayIsByteIdentical", testReplay},
		{"SameKeyOtherPayloadConflicts", testConflict},
		{"MemberOrderIsIrrelevant", testMemberOrder},
		{"KeysAreScopedToActors", testActorsIndependent},
		{"UnavailableIsStoredAndReplayed", testUnavailable},
		{"RaisedCapacityDoesNotReviveOldIntent", testCapacityRaised},
		{"FailedReceiptWriteRollsBackEverything", testFailReceiptWrite},
		{"RefusalsStoreNothing", testRefusalsStoreNothing},
		{"InvalidArgumentsStoreNothing", testInvalidArguments},
		{"OperationLookupIsPerActor", testOperationLookup},
		{"ReservationVisibility", testReservationVisibility},
		{"WorkshopAdmin", testWorkshopAdmin},
		{"HiddenWorkshops", testHiddenWorkshops},
		{"ReserveBatch", testReserveBatch},
		{"Tokens", testTokens},
		{"TokenLifecycle", testTokenLifecycle},
		{"RevocationReachesEveryEngine", testRevocationReachesEveryEngine},
		{"TokenLastUsed", testTokenLastUsed},
		{"LoginCodesAndSessions", testLoginCodesAndSessions},
		{"ExpiredCredentialsArePurged", testExpiredCredentialsPurged},
		{"CheckFindsBrokenInvariants", testCheckFindings},
		{"ConcurrentSameKey", testConcurrentSameKey},
		{"ConcurrentLastPlaces", testConcurrentLastPlaces},
		{"ConcurrentDistinctKeys", testConcurrentDistinctKeys},
		{"FaultsAmidConcurrentLoad", testFaultsAmidConcurrentLoad},
		{"CancelFreesPlacesOnce", testCancel},
		{"CancelReplayAndConflict", testCancelConflicts},
		{"CancelAlreadyCancelled", testCancelAlreadyCancelled},
		{"CancelVisibility", testCancelVisibility},
		{"CancelFailedReceiptWriteRollsBack", testCancelFailReceiptWrite},
		{"ConcurrentCancels", testConcurrentCancels},
		{"OutboxOneEventPerEffect", testOutbox},
		{"RetentionTombstones", testRetention},
		{"ExpiryInBoundedSteps", testExpiryInSteps},
		{"OperationsViewOrderAndCursors", testOperationsOrder},
		{"OperationsViewVisitsOnlyItsPage", testOperationsVisits},
		{"TimeIndexFollowsRewrites", testTimeIndexFollowsRewrites},
		{"TimeOrderedScansPage", testTimeOrderedScans},
		{"CheckFindsBrokenLifecycle", testCheckLifecycleFindings},
		{"HoldLifecycle", testHoldLifecycle},
		{"HoldRelease", testHoldRelease},
		{"HoldDeadlineIsExact", testHoldDeadline},
		{"HoldExpiryFreesExactlyItsPlaces", testHoldExpiryFreesPlaces},
		{"HoldReplayAfterCapacityChange", testHoldReplayAfterCapacityChange},
		{"HoldConflictsAndVisibility", testHoldConflictsAndVisibility},
		{"ConcurrentConfirmsOfOneHold", testConcurrentConfirms},
		{"ConfirmReleaseRace", testConfirmReleaseRace},
		{"HoldTombstones", testHoldTombstones},
		{"CheckFindsBrokenHolds", testCheckFindsBrokenHolds},
		{"ConfirmWaitingForTheWriter", testConfirmWaitingForTheWriter},
		{"CheckFindsHoldsSettledOutOfTime", testCheckFindsHoldsSettledOutOfTime},
		{"ExpireHoldsSaysWhatIsLeft", testExpireHoldsSaysWhatIsLeft},
		{"ConcurrentLastPlacesPastDeadlines", testConcurrentLastPlacesPastDeadlines},
		{"ExpiredHoldsAreWalkedOnce", testExpiredHoldsWalkedOnce},
		{"ListReservations", testListReservations},
		{"ListHolds", testListHolds},
		{"ListVisitsOnlyItsPage", testListVisits},
		{"BatchItemsAreSingleReservations", testBatchItems},
		{"BatchAtomicRefusalStoresNothing", testBatchAtomicRefusal},
		{"BatchMixedReplayAndNew", testBatchMixedReplay},
		{"BatchFailedReceiptWriteRollsBackAll", testBatchFailReceiptWrite},
		{"ConcurrentOverlappingBatches", testConcurrentOverlappingBatches},
		{"BindingIsStable", testBindingIsStable},
		{"BindingNamesAreNeverReused", testBindingNamesAreNeverReused},
		{"BindingNumbersSkipHistory", testBindingNumbersSkipHistory},
		{"BindingWaitsForAName", testBindingWaitsForAName},
		{"OIDCSubjects", testOIDCSubjects},
		{"BindingSkipsTokenActors", testBindingSkipsTokenActors},
		{"AddBindingRefusesBound", testAddBindingRefusesBound},
		{"ConcurrentBindsAgree", testConcurrentBindsAgree},
		{"CheckFindsBrokenBindings", testCheckFindsBrokenBindings},
		{"EmailCodeBindsOnRedeem", testEmailCodeBindsOnRedeem},
		{"ScheduleRoundTrips", testScheduleRoundTrips},
		{"RegistrationWindowIsStoredAndReplayed", testRegistrationWindow},
		{"LimitPerPersonIsStoredAndReplayed", testLimitPerPerson},
		{"DeleteWorkshop", testDeleteWorkshop},
		{"AttendeesPageBySeeking", testAttendees},
		{"AtomicBatchNamesScheduleRefusals", testAtomicBatchNamesScheduleRefusals},
		{"CheckFindsBrokenLimits", testCheckFindsBrokenLimits},
		{"CheckFindsBrokenProfiles", testCheckFindsBrokenProfiles},
		{"ProfileRoundTrip", testProfileRoundTrip},
		{"ProfileValidation", testProfileValidation},
		{"HoldEvents", testHoldEvents},
		{"WebhookEndpoints", testWebhookEndpoints},
		{"RoutingMakesEachDeliveryOnce", testRouting},
		{"ClaimAndFinishDeliveries", testClaimAndFinish},
		{"RetryAndSkipDeliveries", testRetryAndSkipDeliveries},
		{"CheckFindsBrokenDeliveries", testCheckFindsBrokenDeliveries},
		{"CheckFindsADeliveryWithoutItsEventAndClaimsGoOn", testClaimSkipsADeliveryWithoutItsEvent},
		{"HoldReminders", testHoldReminders},
		{"RoutingWithoutRemindersMakesNone", testRoutingWithoutRemindersMakesNone},
		{"CheckFindsBrokenReminders", testCheckFindsBrokenReminders},
		{"WaitlistOffersInJoinOrder", testWaitlistOffersInJoinOrder},
		{"WaitlistKeys", testWaitlistKeys},
		{"WaitlistWalkInsWaitBehind", testWaitlistWalkInsWaitBehind},
		{"WaitlistLeave", testWaitlistLeave},
		{"WaitlistJanitorPassesOffers", testWaitlistJanitorPassesOffers},
		{"ConcurrentWaitlist", testConcurrentWaitlist},
		{"CheckFindsBrokenWaitlists", testCheckFindsBrokenWaitlists},
		{"WaitlistSettlementsPassExpiredOffers", testWaitlistSettlementsPassExpiredOffers},
		{"WaitlistLimitPerPerson", testWaitlistLimitPerPerson},
		{"WaitlistSettledAfterDelete", testWaitlistSettledAfterDelete},
		{"WaitlistOrderIsTheJoinOrder", testWaitlistOrderIsTheJoinOrder},
		{"WaitlistRefusalsServeTheList", testWaitlistRefusalsServeTheList},
		{"WaitlistForMoreThanCapacity", testWaitlistForMoreThanCapacity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore(t))
			h.fresh = func() *harness { return newHarness(t, newStore(t)) }
			tt.fn(t, h)
			if !t.Failed() && !strings.HasPrefix(tt.name, "CheckFinds") {
				h.mustCheckClean()
			}
		})
	}
}

// harness is an engine over a fresh store with a fixed clock and
// deterministic, unique reservation ids.
type harness struct {
	t      testing.TB
	ctx    context.Context
	store  engine.Store
	eng    *engine.Engine
	faults *faults.Injector // Decorates store for the engine.
	fresh  func() *harness  // A harness on another new, empty store.
	later  atomic.Int64     // Nanoseconds the harness clock is ahead of Now.
	ids    atomic.Uint64    // The last reservation id handed out.
}

// failReceiptWrites makes the next n write transactions that store a
// receipt fail at that write.
func (h *harness) failReceiptWrites(n int) {
	h.faults.Arm(api.Fault{Fault: api.FaultFailReceiptWrite, Count: n})
}

// advance moves the harness clock forward by d.
func (h *harness) advance(d time.Duration) { h.later.Add(int64(d)) }

// now reads the harness clock.
func (h *harness) now() time.Time { return Now.Add(time.Duration(h.later.Load())) }

func newHarness(t testing.TB, store engine.Store) *harness {
	h := &harness{t: t, ctx: context.Background(), store: store, faults: faults.New(slog.New(slog.DiscardHandler))}
	h.eng = h.engineOn(h.faults.Store(store))
	return h
}

// engineOn returns an engine on store (the harness's store, decorated) with
// the harness's clock and reservation ids.
func (h *harness) engineOn(store engine.Store) *engine.Engine {
	return engine.New(store,
		engine.WithClock(h.now),
		engine.WithIDs(func(time.Time) string { return fmt.Sprintf("%032x", h.ids.Add(1)) }),
		engine.WithTokenCacheTTL(suiteTokenTTL),
	)
}

var reservedBody = regexp.MustCompile(`^\{"status":"reserved","reservation_id":"[0-9a-f]{32}","workshop":"[a-z][a-z0-9-]+","quantity":[0-9]+\}$`)

// newKey returns a fresh operation key: a random UUIDv4 and a time-ordered
// UUIDv7 in turn, so that every test of the suite stores receipts of both
// kinds of key, which a store may keep in different places.
func newKey() engine.OperationKey {
	if keyTurn.Add(1)%2 == 0 {
		return engine.OperationKey(uuid.NewString())
	}
	return engine.OperationKey(uuid.Must(uuid.NewV7()).String())
}

var keyTurn atomic.Uint64

func (h *harness) workshop(id string, capacity, maxQuantity int) engine.Workshop {
	h.t.Helper()
	w, created, err := h.eng.PutWorkshop(h.ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: maxQuantity, Title: "Workshop " + id}, nil)
	if err != nil || !created {
		h.t.Fatalf("PutWorkshop(%s): created=%v err=%v", id, created, err)
	}
	return w
}

func (h *harness) reserve(actor string, key engine.OperationKey, workshop string, quantity int) (engine.Outcome, error) {
	return h.eng.Reserve(h.ctx, actor, key, engine.Request{Workshop: workshop, Quantity: quantity})
}

func (h *harness) mustReserve(actor string, key engine.OperationKey, workshop string, quantity int) engine.Outcome {
	h.t.Helper()
	out, err := h.reserve(actor, key, workshop, quantity)
	if err != nil {
		h.t.Fatalf("Reserve(%s, %s, %s×%d): %v", actor, key, workshop, quantity, err)
	}
	return out
}

// counts returns the number of reservations and receipts in the store.
func (h *harness) counts() (reservations, receipts int) {
	h.t.Helper()
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		if err := tx.ForEachReservation(func(engine.Reservation) error { reservations++; return nil }); err != nil {
			return err
		}
		return tx.ForEachReceipt(func(engine.Receipt) error { receipts++; return nil })
	})
	if err != nil {
		h.t.Fatalf("count: %v", err)
	}
	return reservations, receipts
}

func (h *harness) wantCounts(reservations, receipts int) {
	h.t.Helper()
	gotRes, gotRec := h.counts()
	if gotRes != reservations || gotRec != receipts {
		h.t.Fatalf("store holds %d reservations and %d receipts, want %d and %d", gotRes, gotRec, reservations, receipts)
	}
}

func (h *harness) wantReserved(id string, reserved int) {
	h.t.Helper()
	w, err := h.eng.Workshop(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	if w.Reserved != reserved || w.Available != w.Capacity-reserved {
		h.t.Fatalf("workshop %s: reserved=%d available=%d capacity=%d, want reserved=%d", id, w.Reserved, w.Available, w.Capacity, reserved)
	}
}

// checker is a store with checks of its own beyond the engine's, such as
// boltstore's of its indexes.
type checker interface {
	Check(ctx context.Context) ([]engine.Finding, error)
}

func (h *harness) mustCheckClean() {
	h.t.Helper()
	// The engine's check runs at the harness clock; a store's own check
	// (its indexes) at the real one, which only sees fewer holds open.
	findings, err := engine.CheckAt(h.ctx, h.store, h.now())
	if c, ok := h.store.(checker); ok && err == nil {
		var more []engine.Finding
		more, err = c.Check(h.ctx)
		findings = append(findings, more...)
	}
	if err != nil {
		h.t.Fatalf("Check: %v", err)
	}
	for _, f := range findings {
		h.t.Errorf("Check finding: %s", f)
	}
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := engine.ErrorCode(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func testFirstEffect(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	out := h.mustReserve("alice", key, "go-basics", 2)
	if out.Answer.Status != engine.StatusReserved || out.Replayed {
		t.Fatalf("first answer: status %q replayed %v, want reserved, not replayed", out.Answer.Status, out.Replayed)
	}
	if !reservedBody.Match(out.Answer.JSON()) {
		t.Fatalf("body %s does not have the reserved shape", out.Answer.JSON())
	}
	want := fmt.Sprintf(`{"status":"reserved","reservation_id":"%s","workshop":"go-basics","quantity":2}`, out.Answer.ReservationID)
	if string(out.Answer.JSON()) != want {
		t.Fatalf("body = %s, want %s", out.Answer.JSON(), want)
	}
	res, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "alice"}, out.Answer.ReservationID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Actor != "alice" || res.OperationKey != key || res.Workshop != "go-basics" || res.Quantity != 2 || !res.CreatedAt.Equal(Now) {
		t.Fatalf("stored reservation = %+v", res)
	}
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Answer.Status != engine.StatusReserved || !bytes.Equal(rec.Answer.JSON(), out.Answer.JSON()) || rec.FingerprintVersion != engine.ReserveFingerprintV1 || rec.ReservationID != out.Answer.ReservationID {
		t.Fatalf("stored receipt = %+v", rec)
	}
	h.wantReserved("go-basics", 2)
	h.wantCounts(1, 1)
}

func testReplay(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	first := h.mustReserve("alice", key, "go-basics", 1)
	for i := 0; i < 3; i++ {
		again := h.mustReserve("alice", key, "go-basics", 1)
		if !again.Replayed || again.Answer != first.Answer || !bytes.Equal(again.Answer.JSON(), first.Answer.JSON()) || again.Answer.ReservationID != first.Answer.ReservationID {
			t.Fatalf("repeat %d = %+v (body %s), want a replay of %s", i, again, again.Answer.JSON(), first.Answer.JSON())
		}
	}
	h.wantReserved("go-basics", 1)
	h.wantCounts(1, 1)
}

func testConflict(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	first := h.mustReserve("alice", key, "go-basics", 1)
	_, err := h.reserve("alice", key, "go-basics", 2)
	wantCode(t, err, engine.CodeOperationConflict)
	h.workshop("rust-basics", 3, 2)
	_, err = h.reserve("alice", key, "rust-basics", 1)
	wantCode(t, err, engine.CodeOperationConflict)
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Answer.JSON(), first.Answer.JSON()) || rec.Request.Quantity != 1 {
		t.Fatalf("receipt changed by a conflicting request: %+v", rec)
	}
	again := h.mustReserve("alice", key, "go-basics", 1)
	if !again.Replayed || !bytes.Equal(again.Answer.JSON(), first.Answer.JSON()) {
		t.Fatalf("original no longer replays: %+v", again)
	}
	h.wantReserved("go-basics", 1)
	h.wantReserved("rust-basics", 0)
	h.wantCounts(1, 1)
}

func testMemberOrder(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	a, err := api.DecodeRequest([]byte(`{"workshop":"go-basics","quantity":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := api.DecodeRequest([]byte(" {\n \"quantity\" : 1 ,\"workshop\":\"go-basics\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	key := newKey()
	first, err := h.eng.Reserve(h.ctx, "alice", key, a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.eng.Reserve(h.ctx, "alice", key, b)
	if err != nil {
		t.Fatalf("reordered members were treated as a different payload: %v", err)
	}
	if !again.Replayed || !bytes.Equal(first.Answer.JSON(), again.Answer.JSON()) {
		t.Fatalf("reordered members did not replay: %+v", again)
	}
	h.wantCounts(1, 1)
}

func testActorsIndependent(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	a := h.mustReserve("alice", key, "go-basics", 1)
	b := h.mustReserve("bob", key, "go-basics", 1)
	if a.Replayed || b.Replayed || a.Answer.ReservationID == b.Answer.ReservationID || a.Answer.Status != engine.StatusReserved || b.Answer.Status != engine.StatusReserved {
		t.Fatalf("same key under two actors: alice %+v, bob %+v; want two independent reservations", a, b)
	}
	// A different payload under bob's use of the key is bob's conflict only.
	_, err := h.reserve("bob", key, "go-basics", 2)
	wantCode(t, err, engine.CodeOperationConflict)
	h.wantReserved("go-basics", 2)
	h.wantCounts(2, 2)
}

func testUnavailable(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	h.mustReserve("alice", newKey(), "go-basics", 2)
	key := newKey()
	out := h.mustReserve("bob", key, "go-basics", 2)
	want := `{"status":"unavailable","workshop":"go-basics","quantity":2}`
	if out.Answer.Status != engine.StatusUnavailable || string(out.Answer.JSON()) != want || out.Replayed || out.Answer.ReservationID != "" {
		t.Fatalf("answer = %+v body %s, want already_cancelled or unavailable %s", out, out.Answer.JSON(), want)
	}
	again := h.mustReserve("bob", key, "go-basics", 2)
	if !again.Replayed || again.Answer.Status != engine.StatusUnavailable || string(again.Answer.JSON()) != want {
		t.Fatalf("repeat = %+v body %s, want replayed unavailable", again, again.Answer.JSON())
	}
	// The last place is still there for a new intent of one place.
	if out := h.mustReserve("bob", newKey(), "go-basics", 1); out.Answer.Status != engine.StatusReserved {
		t.Fatalf("last place: %+v", out)
	}
	h.wantReserved("go-basics", 3)
	h.wantCounts(2, 3)
}

func testCapacityRaised(t *testing.T, h *harness) {
	h.workshop("go-basics", 1, 1)
	h.mustReserve("alice", newKey(), "go-basics", 1)
	old := newKey()
	if out := h.mustReserve("bob", old, "go-basics", 1); out.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("full workshop answered %q", out.Answer.Status)
	}
	if _, _, err := h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 5}, nil); err != nil {
		t.Fatal(err)
	}
	again := h.mustReserve("bob", old, "go-basics", 1)
	if again.Answer.Status != engine.StatusUnavailable || !again.Replayed {
		t.Fatalf("old intent after capacity raise = %+v; an unavailable intent must stay unavailable", again)
	}
	fresh := h.mustReserve("bob", newKey(), "go-basics", 1)
	if fresh.Answer.Status != engine.StatusReserved || fresh.Replayed {
		t.Fatalf("new intent after capacity raise = %+v, want reserved", fresh)
	}
	h.wantReserved("go-basics", 2)
	h.wantCounts(2, 3)
}

func testFailReceiptWrite(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	h.failReceiptWrites(1)
	key := newKey()
	_, err := h.reserve("alice", key, "go-basics", 1)
	wantCode(t, err, engine.CodeInternal)
	h.wantReserved("go-basics", 0)
	h.wantCounts(0, 0)
	if _, err := h.eng.Operation(h.ctx, "alice", key); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Fatalf("receipt after failed write: %v", err)
	}
	out := h.mustReserve("alice", key, "go-basics", 1)
	if out.Answer.Status != engine.StatusReserved || out.Replayed {
		t.Fatalf("retry after failed receipt write = %+v, want a first reserved", out)
	}
	h.wantReserved("go-basics", 1)
	h.wantCounts(1, 1)
}

func testRefusalsStoreNothing(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	_, err := h.reserve("alice", key, "no-such-workshop", 1)
	wantCode(t, err, engine.CodeUnknownWorkshop)
	_, err = h.reserve("alice", key, "go-basics", 3)
	wantCode(t, err, engine.CodeRequestContract)
	h.wantCounts(0, 0)
	h.wantReserved("go-basics", 0)
	// Refusals bind nothing: the key is still free for a valid payload.
	if out := h.mustReserve("alice", key, "go-basics", 2); out.Answer.Status != engine.StatusReserved || out.Replayed {
		t.Fatalf("key after refusals = %+v", out)
	}
	h.wantCounts(1, 1)
}

func testInvalidArguments(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	cases := []struct {
		actor string
		key   engine.OperationKey
		req   engine.Request
		code  string
	}{
		{"alice", "", engine.Request{Workshop: "go-basics", Quantity: 1}, engine.CodeInvalidIdempotencyKey},
		{"alice", "F47AC10B-58CC-4372-A567-0E02B2C3D479", engine.Request{Workshop: "go-basics", Quantity: 1}, engine.CodeInvalidIdempotencyKey},
		{"alice", newKey(), engine.Request{Workshop: "Go", Quantity: 1}, engine.CodeRequestContract},
		{"alice", newKey(), engine.Request{Workshop: "go-basics", Quantity: 0}, engine.CodeRequestContract},
		{"alice", newKey(), engine.Request{Workshop: "go-basics", Quantity: -1}, engine.CodeRequestContract},
		{"Alice", newKey(), engine.Request{Workshop: "go-basics", Quantity: 1}, engine.CodeUnauthenticated},
		{"", newKey(), engine.Request{Workshop: "go-basics", Quantity: 1}, engine.CodeUnauthenticated},
	}
	for _, c := range cases {
		_, err := h.eng.Reserve(h.ctx, c.actor, c.key, c.req)
		wantCode(t, err, c.code)
	}
	h.wantCounts(0, 0)
}

func testOperationLookup(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	out := h.mustReserve("alice", key, "go-basics", 1)
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	if rec.OperationKey != key || rec.Answer != out.Answer || string(rec.Answer.JSON()) != string(out.Answer.JSON()) || !rec.CreatedAt.Equal(Now) {
		t.Fatalf("operation = %+v", rec)
	}
	_, err = h.eng.Operation(h.ctx, "bob", key)
	wantCode(t, err, engine.CodeUnknownOperation)
	_, err = h.eng.Operation(h.ctx, "alice", newKey())
	wantCode(t, err, engine.CodeUnknownOperation)
}

func testReservationVisibility(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	out := h.mustReserve("alice", newKey(), "go-basics", 1)
	if _, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "alice"}, out.Answer.ReservationID); err != nil {
		t.Fatalf("owner: %v", err)
	}
	if _, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "root", Admin: true}, out.Answer.ReservationID); err != nil {
		t.Fatalf("admin: %v", err)
	}
	_, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "bob"}, out.Answer.ReservationID)
	wantCode(t, err, engine.CodeUnknownReservation)
	_, err = h.eng.Reservation(h.ctx, engine.Principal{Actor: "alice"}, fmt.Sprintf("%032x", 999999))
	wantCode(t, err, engine.CodeUnknownReservation)
	_, err = h.eng.Reservation(h.ctx, engine.Principal{Actor: "alice"}, "../etc")
	wantCode(t, err, engine.CodeUnknownReservation)
}

func testWorkshopAdmin(t *testing.T, h *harness) {
	w, created, err := h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 3}, nil)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	if w.Version != 1 || w.Title != "go-basics" || w.MaxQuantity != 3 || w.Available != 3 {
		t.Fatalf("created workshop = %+v", w)
	}
	h.mustReserve("alice", newKey(), "go-basics", 2)
	_, _, err = h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 1}, nil)
	wantCode(t, err, engine.CodeCapacityBelowReserved)
	stale := uint64(7)
	_, _, err = h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 10}, &stale)
	wantCode(t, err, engine.CodeVersionMismatch)
	_, _, err = h.eng.PutWorkshop(h.ctx, "other", engine.WorkshopSpec{Capacity: 10}, &stale)
	wantCode(t, err, engine.CodeVersionMismatch)
	cur := uint64(1)
	w, created, err = h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 10, MaxQuantity: 4, Title: "Go, the basics"}, &cur)
	if err != nil || created {
		t.Fatalf("update: %v created=%v", err, created)
	}
	if w.Version != 2 || w.Capacity != 10 || w.Reserved != 2 || w.Available != 8 || w.MaxQuantity != 4 || w.Title != "Go, the basics" {
		t.Fatalf("updated workshop = %+v", w)
	}
	w, _, err = h.eng.PutWorkshop(h.ctx, "go-basics", engine.WorkshopSpec{Capacity: 2}, nil)
	if err != nil || w.Available != 0 || w.MaxQuantity != 4 || w.Title != "Go, the basics" || w.Version != 3 {
		t.Fatalf("capacity down to reserved: %+v %v", w, err)
	}
	for _, bad := range []struct {
		id   string
		spec engine.WorkshopSpec
	}{
		{"Go", engine.WorkshopSpec{Capacity: 1}},
		{"go", engine.WorkshopSpec{Capacity: -1}},
		{"go", engine.WorkshopSpec{Capacity: 1, MaxQuantity: -1}},
		{"go", engine.WorkshopSpec{Capacity: 1, Title: "bad\ntitle"}},
	} {
		_, _, err := h.eng.PutWorkshop(h.ctx, bad.id, bad.spec, nil)
		wantCode(t, err, engine.CodeRequestContract)
	}
	ws, err := h.eng.Workshops(h.ctx, false)
	if err != nil || len(ws) != 1 || ws[0].ID != "go-basics" {
		t.Fatalf("Workshops = %+v, %v", ws, err)
	}
	_, err = h.eng.Workshop(h.ctx, "nope")
	wantCode(t, err, engine.CodeUnknownWorkshop)
}

// testHiddenWorkshops: a hidden workshop is left out of the list unless it
// asks for hidden ones, and is otherwise a workshop like any other; an
// update that does not name the flag keeps it.
func testHiddenWorkshops(t *testing.T, h *harness) {
	h.workshop("listed", 5, 2)
	yes, no := true, false
	w, created, err := h.eng.PutWorkshop(h.ctx, "bench-1", engine.WorkshopSpec{Capacity: 5, Hidden: &yes}, nil)
	if err != nil || !created || !w.Hidden {
		t.Fatalf("create hidden = %+v, %v, %v", w, created, err)
	}
	ids := func(withHidden bool) []string {
		t.Helper()
		ws, err := h.eng.Workshops(h.ctx, withHidden)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		return ids
	}
	if got := ids(false); !slices.Equal(got, []string{"listed"}) {
		t.Errorf("listed workshops = %q", got)
	}
	if got := ids(true); !slices.Equal(got, []string{"bench-1", "listed"}) {
		t.Errorf("all workshops = %q", got)
	}
	out, err := h.eng.Reserve(h.ctx, "alice", newKey(), engine.Request{Workshop: "bench-1", Quantity: 2})
	if err != nil || out.Answer.Status != engine.StatusReserved {
		t.Fatalf("reserve in a hidden workshop = %+v, %v", out, err)
	}
	if w, err = h.eng.Workshop(h.ctx, "bench-1"); err != nil || !w.Hidden || w.Reserved != 2 {
		t.Fatalf("hidden workshop = %+v, %v", w, err)
	}
	if w, _, err = h.eng.PutWorkshop(h.ctx, "bench-1", engine.WorkshopSpec{Capacity: 6}, nil); err != nil || !w.Hidden {
		t.Fatalf("an update without the flag = %+v, %v", w, err)
	}
	if w, _, err = h.eng.PutWorkshop(h.ctx, "bench-1", engine.WorkshopSpec{Capacity: 6, Hidden: &no}, nil); err != nil || w.Hidden {
		t.Fatalf("listing it again = %+v, %v", w, err)
	}
	if got := ids(false); !slices.Equal(got, []string{"bench-1", "listed"}) {
		t.Errorf("listed workshops after listing it again = %q", got)
	}
	h.mustCheckClean()
}

func testReserveBatch(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	dup := newKey()
	items := []engine.BatchItem{
		{Actor: "alice", Key: dup, Request: engine.Request{Workshop: "go-basics", Quantity: 2}},
		{Actor: "alice", Key: dup, Request: engine.Request{Workshop: "go-basics", Quantity: 2}},
		{Actor: "bob", Key: newKey(), Request: engine.Request{Workshop: "go-basics", Quantity: 2}},
		{Actor: "bob", Key: newKey(), Request: engine.Request{Workshop: "nope", Quantity: 1}},
		{Actor: "alice", Key: newKey(), Request: engine.Request{Workshop: "go-basics", Quantity: 1}},
	}
	vs, err := h.eng.ReserveBatch(h.ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Outcome.Answer.Status != engine.StatusReserved || !vs[1].Outcome.Replayed || vs[1].Outcome.Answer.ReservationID != vs[0].Outcome.Answer.ReservationID ||
		vs[2].Outcome.Answer.Status != engine.StatusUnavailable || engine.ErrorCode(vs[3].Refusal) != engine.CodeUnknownWorkshop || vs[4].Outcome.Answer.Status != engine.StatusReserved {
		t.Fatalf("batch verdicts = %+v", vs)
	}
	h.wantReserved("go-basics", 3)
	h.wantCounts(2, 3)
	if _, err := h.eng.ReserveBatch(h.ctx, []engine.BatchItem{{Actor: "alice", Key: "nope", Request: items[0].Request}}); engine.ErrorCode(err) != engine.CodeInvalidIdempotencyKey {
		t.Fatalf("batch with a bad key: %v", err)
	}
	h.wantCounts(2, 3)
}

// concurrently runs fn(i) for i in [0, n) on n goroutines released together.
func concurrently(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

func testConcurrentSameKey(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	outs := h.reserveConcurrently(t, 64, func(int) (string, engine.OperationKey, int) { return "alice", key, 1 })
	firsts := 0
	for i := range outs {
		if !bytes.Equal(outs[i].Answer.JSON(), outs[0].Answer.JSON()) || outs[i].Answer.Status != engine.StatusReserved {
			t.Fatalf("goroutine %d got %q %s, goroutine 0 got %q %s", i, outs[i].Answer.Status, outs[i].Answer.JSON(), outs[0].Answer.Status, outs[0].Answer.JSON())
		}
		if !outs[i].Replayed {
			firsts++
		}
	}
	if firsts != 1 {
		t.Fatalf("%d answers were first (not replayed) answers, want exactly 1", firsts)
	}
	h.wantReserved("go-basics", 1)
	h.wantCounts(1, 1)
}

func testConcurrentLastPlaces(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	outs := h.reserveConcurrently(t, 2, func(i int) (string, engine.OperationKey, int) { return fmt.Sprintf("user%d", i), newKey(), 2 })
	if got := statusCounts(outs); got[engine.StatusReserved] != 1 || got[engine.StatusUnavailable] != 1 {
		t.Fatalf("statuses = %v, want one reserved and one unavailable", got)
	}
	h.wantReserved("go-basics", 2)
	h.wantCounts(1, 2)
}

func testConcurrentDistinctKeys(t *testing.T, h *harness) {
	h.workshop("go-basics", 100, 1)
	outs := h.reserveConcurrently(t, 500, func(i int) (string, engine.OperationKey, int) { return fmt.Sprintf("user%d", i%7), newKey(), 1 })
	ids := map[string]bool{}
	for _, out := range outs {
		if out.Answer.Status == engine.StatusReserved {
			ids[out.Answer.ReservationID] = true
		}
	}
	if got := statusCounts(outs); got[engine.StatusReserved] != 100 || got[engine.StatusUnavailable] != 400 || len(ids) != 100 {
		t.Fatalf("statuses = %v with %d distinct ids, want 100 reserved and 400 unavailable", got, len(ids))
	}
	h.wantReserved("go-basics", 100)
	h.wantCounts(100, 500)
}

// reserveConcurrently runs n reservations on go-basics at once, intent i
// being intent(i), and fails the test on any error.
func (h *harness) reserveConcurrently(t *testing.T, n int, intent func(i int) (actor string, key engine.OperationKey, quantity int)) []engine.Outcome {
	t.Helper()
	outs, errs := make([]engine.Outcome, n), make([]error, n)
	concurrently(n, func(i int) {
		actor, key, quantity := intent(i)
		outs[i], errs[i] = h.reserve(actor, key, "go-basics", quantity)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	return outs
}

func statusCounts(outs []engine.Outcome) map[string]int {
	counts := map[string]int{}
	for _, out := range outs {
		counts[out.Answer.Status]++
	}
	return counts
}

func testTokens(t *testing.T, h *harness) {
	tok, err := h.eng.CreateToken(h.ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := h.eng.CreateToken(h.ctx, "ops", true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, engine.TokenPrefix) || len(tok) < len(engine.TokenPrefix)+43 || tok == admin {
		t.Fatalf("tokens %q and %q: want distinct prefixed tokens of at least 256 bits", tok, admin)
	}
	if p, err := h.eng.Authenticate(h.ctx, tok); err != nil || p != (engine.Principal{Actor: "alice"}) {
		t.Fatalf("Authenticate(alice's token) = %+v, %v", p, err)
	}
	if p, err := h.eng.Authenticate(h.ctx, admin); err != nil || p != (engine.Principal{Actor: "ops", Admin: true}) {
		t.Fatalf("Authenticate(admin token) = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "rsv_", tok + "x", tok[:len(tok)-1], strings.TrimPrefix(tok, engine.TokenPrefix), engine.HashToken(tok)} {
		_, err := h.eng.Authenticate(h.ctx, bad)
		wantCode(t, err, engine.CodeUnauthenticated)
	}
	// Only the hash is stored.
	err = h.store.View(h.ctx, func(tx engine.Tx) error {
		if _, ok, err := tx.Token(tok); ok || err != nil {
			t.Errorf("the token itself is a key in the store (ok=%v err=%v)", ok, err)
		}
		rec, ok, err := tx.Token(engine.HashToken(tok))
		if !ok || err != nil || rec.Actor != "alice" || strings.Contains(fmt.Sprint(rec), tok) {
			t.Errorf("stored token record = %+v ok=%v err=%v", rec, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.eng.CreateToken(h.ctx, "Not An Actor", false)
	wantCode(t, err, engine.CodeRequestContract)

	// An engine remembers the API tokens the store confirmed, so a busy
	// client does not cost a read transaction per request; a refused token
	// is looked up again every time (another daemon on a shared database
	// may have just created it).
	counted := &viewCounter{Store: h.store}
	eng := engine.New(counted)
	for range 3 {
		if p, err := eng.Authenticate(h.ctx, tok); err != nil || p != (engine.Principal{Actor: "alice"}) {
			t.Fatalf("Authenticate(alice's token) = %+v, %v", p, err)
		}
	}
	for range 2 {
		_, err := eng.Authenticate(h.ctx, tok+"x")
		wantCode(t, err, engine.CodeUnauthenticated)
	}
	if n := counted.views.Load(); n != 3 {
		t.Errorf("3 lookups of a valid token and 2 of a bad one read the store %d times, want 3", n)
	}
}

// viewCounter counts the read transactions of a store.
type viewCounter struct {
	engine.Store
	views atomic.Int64
}

func (c *viewCounter) View(ctx context.Context, fn func(engine.Tx) error) error {
	c.views.Add(1)
	return c.Store.View(ctx, fn)
}

// testCheckFindings breaks each invariant through raw Tx writes and expects
// Check to report exactly that kind of finding.
func testCheckFindings(t *testing.T, h *harness) {
	h.workshop("go-basics", 3, 2)
	key := newKey()
	out := h.mustReserve("alice", key, "go-basics", 2)
	h.mustCheckClean()
	res, err := h.eng.Reservation(h.ctx, engine.Principal{Actor: "alice"}, out.Answer.ReservationID)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.eng.Operation(h.ctx, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	w, err := h.eng.Workshop(h.ctx, "go-basics")
	if err != nil {
		t.Fatal(err)
	}
	evs := h.events()
	if len(evs) != 1 {
		t.Fatalf("events after one reservation: %+v", evs)
	}
	// addPlace writes one more reservation of one place under key, with the
	// counter raised to match, so only the missing receipt is wrong.
	addPlace := func(tx engine.Tx, id string, key engine.OperationKey) error {
		extra := res
		extra.ID, extra.OperationKey, extra.Quantity = id, key, 1
		w2 := w
		w2.Reserved = 3
		if err := tx.PutWorkshop(w2); err != nil {
			return err
		}
		return tx.PutReservation(extra)
	}
	cases := []struct {
		name   string
		break_ func(tx engine.Tx) error
		want   []string
	}{
		{"counter above sum", func(tx engine.Tx) error {
			w2 := w
			w2.Reserved++
			return tx.PutWorkshop(w2)
		}, []string{engine.FindingCounter}},
		{"over capacity", func(tx engine.Tx) error {
			w2 := w
			w2.Capacity = 1
			return tx.PutWorkshop(w2)
		}, []string{engine.FindingOverCapacity}},
		{"reservation without receipt", func(tx engine.Tx) error {
			return addPlace(tx, fmt.Sprintf("%032x", 1<<40), newKey())
		}, []string{engine.FindingOrphanReserve, engine.FindingMissingEvent}},
		{"second reservation for one key", func(tx engine.Tx) error {
			return addPlace(tx, fmt.Sprintf("%032x", 1<<41), res.OperationKey)
		}, []string{engine.FindingOrphanReserve, engine.FindingMissingEvent}},
		{"reserved receipt without its reservation", func(tx engine.Tx) error {
			r2 := rec
			r2.OperationKey = newKey()
			r2.ReservationID = fmt.Sprintf("%032x", 1<<42)
			r2.Answer = engine.StoredAnswer(engine.OperationReserve, engine.StatusReserved, []byte(fmt.Sprintf(`{"status":"reserved","reservation_id":"%s","workshop":"go-basics","quantity":2}`, r2.ReservationID)))
			return tx.PutReceipt(r2)
		}, []string{engine.FindingOrphanReceipt}},
		{"receipt names another key's reservation", func(tx engine.Tx) error {
			r2 := rec
			r2.OperationKey = newKey()
			return tx.PutReceipt(r2)
		}, []string{engine.FindingOrphanReceipt}},
		{"reservation of unknown workshop", func(tx engine.Tx) error {
			extra := res
			extra.ID, extra.OperationKey, extra.Workshop = fmt.Sprintf("%032x", 1<<43), newKey(), "gone"
			r2 := rec
			r2.OperationKey, r2.ReservationID, r2.Request.Workshop = extra.OperationKey, extra.ID, "gone"
			r2.Fingerprint = engine.Fingerprint(r2.Request)
			r2.Answer = engine.StoredAnswer(engine.OperationReserve, engine.StatusReserved, []byte(fmt.Sprintf(`{"status":"reserved","reservation_id":"%s","workshop":"gone","quantity":2}`, extra.ID)))
			if err := tx.PutReceipt(r2); err != nil {
				return err
			}
			return tx.PutReservation(extra)
		}, []string{engine.FindingUnknownWorkshop, engine.FindingMissingEvent}},
		{"stored body differs from request", func(tx engine.Tx) error {
			r2 := rec
			r2.Answer = engine.StoredAnswer(engine.OperationReserve, engine.StatusReserved, []byte(`{"status":"reserved"}`))
			return tx.PutReceipt(r2)
		}, []string{engine.FindingMalformedReceipt}},
		{"fingerprint differs from request", func(tx engine.Tx) error {
			r2 := rec
			r2.Fingerprint = engine.Fingerprint(engine.Request{Workshop: "go-basics", Quantity: 1})
			return tx.PutReceipt(r2)
		}, []string{engine.FindingMalformedReceipt}},
	}
	for _, c := range cases {
		// Each case breaks a fresh copy of the same clean state.
		fresh := h.fresh()
		fresh.workshop("go-basics", 3, 2)
		err := fresh.store.Update(fresh.ctx, func(tx engine.Tx) error {
			if err := tx.PutReservation(res); err != nil {
				return err
			}
			if err := tx.PutReceipt(rec); err != nil {
				return err
			}
			if err := tx.PutWorkshop(w); err != nil {
				return err
			}
			if err := tx.AddEvent(evs[0]); err != nil {
				return err
			}
			return c.break_(tx)
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fresh.wantFindings(c.name, c.want)
	}
}

// wantFindings runs Check and wants exactly findings of the kinds want, in
// that order.
func (h *harness) wantFindings(name string, want []string) {
	h.t.Helper()
	findings, err := engine.Check(h.ctx, h.store)
	if err != nil {
		h.t.Fatalf("%s: Check: %v", name, err)
	}
	var kinds []string
	for _, f := range findings {
		kinds = append(kinds, f.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		h.t.Errorf("%s: finding kinds %v, want %v (findings: %v)", name, kinds, want, findings)
	}
}

// testFaultsAmidConcurrentLoad arms receipt-write failures while 64 intents
// commit concurrently: a store that batches commits must roll back only the
// failing intents and still commit every other one exactly once.
func testFaultsAmidConcurrentLoad(t *testing.T, h *harness) {
	h.workshop("go-basics", 1000, 1)
	h.failReceiptWrites(5)
	ks := make([]engine.OperationKey, 64)
	for i := range ks {
		ks[i] = newKey()
	}
	outs := make([]engine.Outcome, 64)
	errs := make([]error, 64)
	concurrently(64, func(i int) { outs[i], errs[i] = h.reserve("alice", ks[i], "go-basics", 1) })
	failed := 0
	for i := range outs {
		switch {
		case errs[i] != nil:
			wantCode(t, errs[i], engine.CodeInternal)
			failed++
		case outs[i].Answer.Status != engine.StatusReserved || outs[i].Replayed:
			t.Fatalf("intent %d: %+v", i, outs[i])
		}
	}
	if failed != 5 {
		t.Fatalf("%d intents failed, want exactly the 5 armed faults", failed)
	}
	h.wantReserved("go-basics", 59)
	h.wantCounts(59, 59)
	// The failed intents left no trace, so their retries are first answers.
	for i := range outs {
		if errs[i] == nil {
			continue
		}
		if out := h.mustReserve("alice", ks[i], "go-basics", 1); out.Answer.Status != engine.StatusReserved || out.Replayed {
			t.Fatalf("retry of failed intent %d: %+v", i, out)
		}
	}
	h.wantReserved("go-basics", 64)
	h.wantCounts(64, 64)
}

// tokens returns the kind of every credential record in the store, by
// hash.
func (h *harness) tokens() map[string]string {
	h.t.Helper()
	kinds := map[string]string{}
	err := h.store.View(h.ctx, func(tx engine.Tx) error {
		return tx.ForEachToken(func(r engine.TokenRecord) error {
			kinds[r.Hash] = r.Kind
			return nil
		})
	})
	if err != nil {
		h.t.Fatalf("list tokens: %v", err)
	}
	return kinds
}

// wantTokens checks that the store holds exactly the credentials secrets.
func (h *harness) wantTokens(what string, secrets ...string) {
	h.t.Helper()
	got := h.tokens()
	want := map[string]bool{}
	for _, s := range secrets {
		want[engine.HashToken(s)] = true
		if _, ok := got[engine.HashToken(s)]; !ok {
			h.t.Errorf("%s: the credential %.8s… is not in the store", what, s)
		}
	}
	for hash, kind := range got {
		if !want[hash] {
			h.t.Errorf("%s: the store still holds a %s credential %.8s…", what, kind, hash)
		}
	}
}

// A redeemed login code is deleted at once, an ended session too, and
// codes and sessions that expired unused are removed when the next login
// code is issued, in bounded steps; API tokens and live credentials stay.
func testExpiredCredentialsPurged(t *testing.T, h *harness) {
	token, err := h.eng.CreateToken(h.ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	login := func(actor string) string {
		t.Helper()
		code, _, err := h.eng.CreateLoginCode(h.ctx, actor)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	redeem := func(code string, ttl time.Duration) string {
		t.Helper()
		session, _, _, err := h.eng.RedeemLoginCode(h.ctx, code, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return session
	}
	short := redeem(login("alice"), time.Hour)
	long := redeem(login("alice"), 3*time.Hour)
	ended := redeem(login("bob"), time.Hour)
	if err := h.eng.EndSession(h.ctx, ended); err != nil {
		t.Fatal(err)
	}
	unused := login("carol")
	h.wantTokens("after redeeming and ending", token, short, long, unused)

	// An hour on, the short session and the unused code have expired; the
	// next issue removes them.
	h.advance(time.Hour)
	next := login("dave")
	h.wantTokens("after the next issue", token, long, next)
	if p, err := h.eng.Authenticate(h.ctx, token); err != nil || p.Actor != "alice" {
		t.Errorf("the API token after the purge: %+v, %v", p, err)
	}
	if p, err := h.eng.SessionPrincipal(h.ctx, long); err != nil || p.Actor != "alice" {
		t.Errorf("the live session after the purge: %+v, %v", p, err)
	}

	// A backlog goes in steps of the limit.
	for range 3 {
		login("erin")
	}
	h.advance(3 * time.Hour)
	for i, want := range []int{2, 2, 1, 0} { // 4 codes and the long session.
		n, err := h.eng.PurgeExpiredCredentials(h.ctx, 2)
		if err != nil || n != want {
			t.Fatalf("purge step %d: %d, %v; want %d", i+1, n, err, want)
		}
	}
	h.wantTokens("after the purge steps", token)
}

func testLoginCodesAndSessions(t *testing.T, h *harness) {
	code, expires, err := h.eng.CreateLoginCode(h.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(code, engine.LoginCodePrefix) || !expires.Equal(Now.Add(engine.LoginCodeTTL)) {
		t.Fatalf("login code %q expires %v", code, expires)
	}
	// A login code is not a bearer token, and vice versa.
	_, err = h.eng.Authenticate(h.ctx, code)
	wantCode(t, err, engine.CodeUnauthenticated)
	_, err = h.eng.SessionPrincipal(h.ctx, code)
	wantCode(t, err, engine.CodeUnauthenticated)

	session, who, until, err := h.eng.RedeemLoginCode(h.ctx, code, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if who != (engine.Principal{Actor: "alice"}) || !until.Equal(Now.Add(time.Hour)) || !strings.HasPrefix(session, engine.SessionPrefix) {
		t.Fatalf("redeemed: %q %+v %v", session, who, until)
	}
	if p, err := h.eng.SessionPrincipal(h.ctx, session); err != nil || p != who {
		t.Fatalf("SessionPrincipal = %+v, %v", p, err)
	}
	_, err = h.eng.Authenticate(h.ctx, session)
	wantCode(t, err, engine.CodeUnauthenticated)
	// A code opens one session only.
	_, _, _, err = h.eng.RedeemLoginCode(h.ctx, code, time.Hour)
	wantCode(t, err, engine.CodeUnauthenticated)
	// Only hashes are stored.
	err = h.store.View(h.ctx, func(tx engine.Tx) error {
		for _, secret := range []string{code, session} {
			if _, ok, err := tx.Token(secret); ok || err != nil {
				t.Errorf("secret %q is a key in the store (ok=%v err=%v)", secret, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Sessions end on EndSession and on expiry.
	if err := h.eng.EndSession(h.ctx, session); err != nil {
		t.Fatal(err)
	}
	_, err = h.eng.SessionPrincipal(h.ctx, session)
	wantCode(t, err, engine.CodeUnauthenticated)
	if err := h.eng.EndSession(h.ctx, session); err != nil {
		t.Fatalf("ending an ended session: %v", err)
	}
	code2, _, err := h.eng.CreateLoginCode(h.ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	session2, _, _, err := h.eng.RedeemLoginCode(h.ctx, code2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Hour)
	_, err = h.eng.SessionPrincipal(h.ctx, session2)
	wantCode(t, err, engine.CodeUnauthenticated)
	// A code expires after LoginCodeTTL.
	code3, _, err := h.eng.CreateLoginCode(h.ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	h.advance(engine.LoginCodeTTL)
	_, _, _, err = h.eng.RedeemLoginCode(h.ctx, code3, time.Hour)
	wantCode(t, err, engine.CodeUnauthenticated)
	for _, bad := range []string{"", engine.LoginCodePrefix, code + "x", engine.HashToken(code)} {
		_, _, _, err := h.eng.RedeemLoginCode(h.ctx, bad, time.Hour)
		wantCode(t, err, engine.CodeUnauthenticated)
	}
	_, _, err = h.eng.CreateLoginCode(h.ctx, "Not An Actor")
	wantCode(t, err, engine.CodeRequestContract)

	// Sixteen browsers opening one link at once get one session.
	code4, _, err := h.eng.CreateLoginCode(h.ctx, "dave")
	if err != nil {
		t.Fatal(err)
	}
	var won atomic.Int32
	concurrently(16, func(int) {
		_, _, _, err := h.eng.RedeemLoginCode(h.ctx, code4, time.Hour)
		switch engine.ErrorCode(err) {
		case "":
			won.Add(1)
		case engine.CodeUnauthenticated:
		default:
			t.Errorf("concurrent redeem: %v", err)
		}
	})
	if won.Load() != 1 {
		t.Fatalf("%d concurrent redeems of one login code succeeded, want exactly 1", won.Load())
	}
}
