package boltstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

// testdata/schema11.dump was written by reserved of schema version 11
// (commit f419f9b), driven with curl over its Unix socket by the users
// root, nobody and postgres (actors unix-root, unix-nobody and
// unix-postgres) on 2026-12-02 between 16:26:10Z and 16:26:13Z, and dumped
// bucket by bucket (bucket, hex key, hex value). An admin created the
// workshops go-basics (5 places, at most 2 per reservation) and full (1
// place, offers lasting 600 s). Then: unix-root reserved 2 of go-basics,
// unix-nobody 1; unix-postgres reserved full's place, unix-nobody was
// refused it and then joined its waiting list, as did unix-root; unix-root
// held 1 of go-basics for a day; unix-postgres cancelled full, whose place
// was offered to unix-nobody, who accepted; unix-root left the waiting
// list; unix-postgres reserved the last place of go-basics. The daemon was
// restarted with --receipt-retention 1s, which turned those eleven
// receipts into tombstones, and once more without it, and unix-postgres
// was refused a place of go-basics: the one receipt of the file. Every
// operation key is a UUIDv4, the only kind that version accepted. The
// open hold is unix-root's (01a23793eb3778c0f9294fcff917a46f, until
// 2026-12-03T16:26:10Z); the offer to unix-nobody was
// 01a23793eb460dc45064a6e5f9ada64e, confirmed.

// schema11Receipt is the file's one receipt: unix-postgres refused a place
// of the full go-basics.
var schema11Receipt = fixtureAnswer{"unix-postgres", "b6081bfe-38f9-4bc5-8ea6-0a708192a3b2", nil, engine.Request{Workshop: "go-basics", Quantity: 1},
	`{"status":"unavailable","workshop":"go-basics","quantity":1}`}

// schema11Expired are the operations whose receipts are tombstones: a retry
// of any of them is operation_expired.
var schema11Expired = []struct {
	actor, key string
	hold       *engine.HoldRequest
	req        engine.Request
}{
	{actor: "unix-root", key: "0b5d0c43-8d4e-4c1a-9f3e-5a6b7c8d9e01", req: engine.Request{Workshop: "go-basics", Quantity: 2}},
	{actor: "unix-nobody", key: "1c6e1d54-9e5f-4d2b-8a4f-6b7c8d9e0f12", req: engine.Request{Workshop: "go-basics", Quantity: 1}},
	{actor: "unix-postgres", key: "2d7f2e65-af60-4e3c-9b50-7c8d9e0f1a23", req: engine.Request{Workshop: "full", Quantity: 1}},
	{actor: "unix-nobody", key: "3e803f76-b071-4f4d-8c61-8d9e0f1a2b34", req: engine.Request{Workshop: "full", Quantity: 1}},
	{actor: "unix-nobody", key: "4f914087-c182-4a5e-9d72-9e0f1a2b3c45", req: engine.Request{Workshop: "full", Quantity: 1, Waitlist: true}},
	{actor: "unix-root", key: "50a25198-d293-4b6f-8e83-af1a2b3c4d56", req: engine.Request{Workshop: "full", Quantity: 1, Waitlist: true}},
	{actor: "unix-root", key: "61b362a9-e3a4-4c70-9f94-b02b3c4d5e67", hold: &engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86400}},
	{actor: "unix-postgres", key: "a5f7a6ed-27e8-4ab4-9dd8-f46f708192a1", req: engine.Request{Workshop: "go-basics", Quantity: 1}},
}

// TestSchema11File opens a file as reserved of schema version 11 wrote it:
// its answers replay byte for byte and its expired operations stay expired
// read-only, after the writing open that marks it with version 12 and
// after operations under UUIDv7 keys, which version 12 stores by key; the
// upgrade rewrites no record of the file.
func TestSchema11File(t *testing.T) {
	path, records := loadDump(t, "testdata/schema11.dump")
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	clock := engine.WithClock(func() time.Time { return now })
	answers := []fixtureAnswer{schema11Receipt}
	same := func(s *boltstore.Store, when string) {
		t.Helper()
		replayFixture(t, s, now, answers, nil, when)
		eng := engine.New(s, clock)
		for _, x := range schema11Expired {
			var err error
			if x.hold != nil {
				_, err = eng.Hold(ctx, x.actor, engine.OperationKey(x.key), *x.hold)
			} else {
				_, err = eng.Reserve(ctx, x.actor, engine.OperationKey(x.key), x.req)
			}
			if engine.ErrorCode(err) != engine.CodeOperationExpired {
				t.Errorf("%s: a retry of %s's %s: %v, want %s", when, x.actor, x.key, err, engine.CodeOperationExpired)
			}
		}
		h, err := eng.Hold(ctx, "unix-root", "61b362a9-e3a4-4c70-9f94-b02b3c4d5e67", engine.HoldRequest{Workshop: "go-basics", Quantity: 1, TTLSeconds: 86400})
		if engine.ErrorCode(err) != engine.CodeOperationExpired {
			t.Errorf("%s: hold retry = %+v, %v", when, h, err)
		}
		es, _, err := eng.WorkshopWaitlist(ctx, engine.Principal{Actor: "unix-root", Admin: true}, "full", engine.ListFilter{Limit: engine.MaxListLimit})
		var got []string
		for _, e := range es {
			got = append(got, e.Actor+":"+string(e.State))
		}
		if err != nil || strings.Join(got, " ") != "unix-nobody:reserved unix-root:left" {
			t.Errorf("%s: the waiting list of full = %q, %v", when, got, err)
		}
		for _, actor := range []string{"unix-root", "unix-nobody", "unix-postgres"} {
			if !hasReceiptsOf(t, s, actor) {
				t.Errorf("%s: HasReceiptsOf(%s) = false", when, actor)
			}
		}
		checksClean(t, s, now, when)
	}

	upgradeKeepsRecords(t, path, 11, records, same)
	if got := bucketOf(t, path, "actors_time_keyed"); got == nil || len(got) != 0 {
		t.Errorf("actors_time_keyed after the upgrade = %q, want it empty", got)
	}

	// unix-postgres cancels go-basics, unix-nobody takes the place under
	// a UUIDv7 key, and a new actor is refused one under another.
	s := mustOpenPath(t, path)
	eng := engine.New(s, clock)
	const cancelKey = "c7192c0f-49f7-4cd6-9fb7-1b8192a3b4c3"
	cancelled, err := eng.Cancel(ctx, engine.Principal{Actor: "unix-postgres"}, cancelKey, "01a23793eba80085c61cffa51966c45d")
	if err != nil || cancelled.Answer.Status != engine.StatusCancelled {
		t.Fatalf("the cancellation = %s, %v", cancelled.Answer.JSON(), err)
	}
	nobodyKey, carolKey := v7Key(t), v7Key(t)
	req := engine.Request{Workshop: "go-basics", Quantity: 1}
	nobody, err := eng.Reserve(ctx, "unix-nobody", nobodyKey, req)
	if err != nil || nobody.Answer.Status != engine.StatusReserved {
		t.Fatalf("unix-nobody reserves under %s = %s, %v", nobodyKey, nobody.Answer.JSON(), err)
	}
	carol, err := eng.Reserve(ctx, "carol", carolKey, req)
	if err != nil || carol.Answer.Status != engine.StatusUnavailable {
		t.Fatalf("carol reserves under %s = %s, %v", carolKey, carol.Answer.JSON(), err)
	}
	answers = append(answers,
		fixtureAnswer{"unix-nobody", string(nobodyKey), nil, req, string(nobody.Answer.JSON())},
		fixtureAnswer{"carol", string(carolKey), nil, req, string(carol.Answer.JSON())})
	settlement := fixtureSettlement{engine.OperationCancel, "unix-postgres", cancelKey, "01a23793eba80085c61cffa51966c45d", string(cancelled.Answer.JSON())}
	same(s, "with receipts of UUIDv7 keys")
	replaySettlements(t, s, now, []fixtureSettlement{settlement}, "with receipts of UUIDv7 keys")
	if !hasReceiptsOf(t, s, "carol") {
		t.Error("HasReceiptsOf(carol) = false")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	receipts := bucketOf(t, path, "receipts")
	for _, k := range []string{"\x00" + string(nobodyKey) + "unix-nobody", "\x00" + string(carolKey) + "carol", "unix-postgres\x00" + cancelKey} {
		if _, ok := receipts[k]; !ok {
			t.Errorf("no receipt under %q", k)
		}
	}
	// The new operations leave the file's tombstones, waiting list
	// entries, holds and bindings as they were.
	for _, bucket := range []string{"tombstones", "tombstones_by_time", "wait_entries", "holds", "bindings"} {
		sameRecords(t, path, map[string]map[string]string{bucket: records[bucket]}, "")
	}

	ro, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	same(ro, "read-only, reopened")
	replaySettlements(t, ro, now, []fixtureSettlement{settlement}, "read-only, reopened")
}
