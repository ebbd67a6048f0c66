package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/enginetest"
	"github.com/reserve/reserve/internal/pgstore"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
)

// BenchmarkReserveExecModes measures new reservations in pgx's query exec
// modes, on a direct connection and through PgBouncer: pgx's default
// (cache_statement, prepared statements, which PgBouncer in transaction
// pooling mode does not support) and the modes without prepared statements,
// so that the cost of each choice can be read off. Each of 8 clients
// reserves on its own workshop.
func BenchmarkReserveExecModes(b *testing.B) {
	direct := func(b *testing.B) string { dsn, _ := pgtest.FreshSchema(b); return dsn }
	for _, c := range []struct {
		path  string
		dsn   func(b *testing.B) string
		modes []string
	}{
		{"direct", direct, []string{"cache_statement", "cache_describe", "exec", "simple_protocol"}},
		{"pgbouncer", func(b *testing.B) string { return pgtest.BouncerDSN(b) }, []string{"cache_describe", "exec", "simple_protocol"}},
	} {
		for _, mode := range c.modes {
			b.Run(c.path+"/"+mode, func(b *testing.B) {
				benchReserve(b, pgtest.WithParams(b, c.dsn(b), map[string]string{"default_query_exec_mode": mode}))
			})
		}
	}
}

// benchReserve runs the load of BenchmarkReserveExecModes on dsn.
func benchReserve(b *testing.B, dsn string) {
	const clients = 8
	reserveLoad(b, engine.New(mustOpenDSN(b, dsn, pgstore.Options{MaxConns: clients})), clients, nil)
}

// reserveLoad lets clients reserve b.N places, each client on a workshop
// of its own, and reports the reservations per second. It calls started,
// if not nil, once the workshops exist, before the timer starts.
func reserveLoad(b *testing.B, eng *engine.Engine, clients int, started func()) {
	ctx := context.Background()
	for c := range clients {
		if _, _, err := eng.PutWorkshop(ctx, fmt.Sprint("bench-", c), engine.WorkshopSpec{Capacity: 1_000_000_000, MaxQuantity: 1}, nil); err != nil {
			b.Fatal(err)
		}
	}
	if started != nil {
		started()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				_, err := eng.Reserve(ctx, "bench", engine.OperationKey(uuid.NewString()), engine.Request{Workshop: fmt.Sprint("bench-", c), Quantity: 1})
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
}

// BenchmarkLists measures pages of a person's list, of an actor with
// enginetest.ListBenchRecords reservations and of a fresh one.
func BenchmarkLists(b *testing.B) {
	dsn, _ := pgtest.FreshSchema(b)
	enginetest.BenchmarkLists(b, mustOpenDSN(b, dsn, pgstore.Options{}))
}

// BenchmarkDecisionsWithHistory measures reservations of an actor with
// enginetest.ListBenchRecords reservations in the workshop and of a fresh
// one, in a workshop without and with a limit per person.
func BenchmarkDecisionsWithHistory(b *testing.B) {
	dsn, _ := pgtest.FreshSchema(b)
	enginetest.BenchmarkDecisionsWithHistory(b, mustOpenDSN(b, dsn, pgstore.Options{}))
}

// BenchmarkReserveStatements counts what each new reservation asks the
// server, through a counting proxy: the statements it runs and the round
// trips it waits for, decided alone (one client) and in groups (8 clients
// on 8 workshops).
func BenchmarkReserveStatements(b *testing.B) {
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			dsn, _ := pgtest.FreshSchema(b)
			proxy, through := pgtest.NewProxy(b, dsn)
			counts := proxy.Count()
			var statements, roundTrips int64
			reserveLoad(b, engine.New(mustOpenDSN(b, through, pgstore.Options{MaxConns: int32(clients)})), clients, func() {
				statements, roundTrips = counts.Statements(), counts.RoundTrips()
			})
			b.ReportMetric(float64(counts.Statements()-statements)/float64(b.N), "statements/reservation")
			b.ReportMetric(float64(counts.RoundTrips()-roundTrips)/float64(b.N), "roundtrips/reservation")
		})
	}
}

// countedEngine returns an engine on a store of one connection to a fresh
// schema, through a proxy that counts what it asks the server, the
// counts, and the schema's DSN without the proxy.
func countedEngine(t *testing.T) (*engine.Engine, *pgtest.Counts, string) {
	t.Helper()
	dsn, _ := pgtest.FreshSchema(t)
	proxy, through := pgtest.NewProxy(t, dsn)
	counts := proxy.Count() // Before the store connects.
	return engine.New(mustOpenDSN(t, through, pgstore.Options{MaxConns: 1})), counts, dsn
}

// plainReservationStatements is what a new reservation decided alone
// asks the server, counted as BenchmarkReserveStatements counts: the
// statements it runs and the round trips it waits for. Waiting lists
// left both as they were for a workshop nobody waits for.
const plainReservationStatements, plainReservationRoundTrips = 14, 14

// TestPlainReservationStatements: a new reservation, decided alone, of a
// workshop that never had a waiting list and of one whose waiting list
// has been served (its entries reserved and left, nobody waiting) asks
// the server plainReservationStatements statements in as many round
// trips: waiting lists cost nothing while nobody waits.
func TestPlainReservationStatements(t *testing.T) {
	eng, counts, _ := countedEngine(t)
	ctx := t.Context()
	do := func(out engine.Outcome, err error) engine.Outcome {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	reserve := func(actor, workshop string, waitlist bool) engine.Outcome {
		t.Helper()
		return do(eng.Reserve(ctx, actor, newKey(t), engine.Request{Workshop: workshop, Quantity: 1, Waitlist: waitlist}))
	}
	for _, w := range []string{"plain", "served"} {
		if _, _, err := eng.PutWorkshop(ctx, w, engine.WorkshopSpec{Capacity: 2, MaxQuantity: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// served's list: ada's place goes to bob, who takes it; cleo leaves;
	// dan cancels, and one place is free with nobody waiting.
	ada, dan := reserve("ada", "served", false), reserve("dan", "served", false)
	reserve("bob", "served", true)
	cleo := reserve("cleo", "served", true)
	do(eng.Cancel(ctx, engine.Principal{Actor: "ada"}, newKey(t), ada.Answer.ReservationID))
	es, _, err := eng.Waitlist(ctx, engine.Principal{Actor: "bob"}, engine.ListFilter{})
	if err != nil || len(es) != 1 || es[0].State != engine.WaitOffered {
		t.Fatalf("bob's entries = %+v, %v", es, err)
	}
	do(eng.Confirm(ctx, engine.Principal{Actor: "bob"}, newKey(t), es[0].HoldID))
	do(eng.LeaveWaitlist(ctx, engine.Principal{Actor: "cleo"}, newKey(t), cleo.Answer.EntryID))
	do(eng.Cancel(ctx, engine.Principal{Actor: "dan"}, newKey(t), dan.Answer.ReservationID))
	reserve("warm", "plain", false) // Prepares the statements of a reservation.

	for _, w := range []string{"plain", "served"} {
		statements, roundTrips := counts.Statements(), counts.RoundTrips()
		if out := reserve("erin", w, false); out.Answer.Status != engine.StatusReserved {
			t.Fatalf("erin's reservation of %s = %s", w, out.Answer.JSON())
		}
		if s, r := counts.Statements()-statements, counts.RoundTrips()-roundTrips; s != plainReservationStatements || r != plainReservationRoundTrips {
			t.Errorf("a reservation of %s ran %d statements in %d round trips, want %d in %d", w, s, r, plainReservationStatements, plainReservationRoundTrips)
		}
	}
}

// limitedReservationStatements is what a new reservation of a workshop
// with a limit per person, decided alone, asks the server: a plain
// reservation's statements and the one that reads the places the person
// has (PlacesOf), in as many round trips.
const limitedReservationStatements, limitedReservationRoundTrips = plainReservationStatements + 1, plainReservationRoundTrips + 1

// TestLimitedReservationStatements: a new reservation, decided alone, of
// a workshop with a limit per person asks the server
// limitedReservationStatements statements, as many for a person with no
// history there as for one with 3,000 cancelled reservations, 3,000
// released holds and 3,000 entries that left its waiting list; and a
// reservation of a workshop without a limit still asks
// plainReservationStatements.
func TestLimitedReservationStatements(t *testing.T) {
	eng, counts, dsn := countedEngine(t)
	ctx := t.Context()
	for w, limit := range map[string]int{"limited": 2, "plain": 0} {
		if _, _, err := eng.PutWorkshop(ctx, w, engine.WorkshopSpec{Capacity: 100, MaxQuantity: 1, Schedule: engine.Schedule{MaxPerPerson: limit}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	pgstore.AddHistory(t, dsn, "limited", "busy", "a", 3000)
	pgstore.AddHistory(t, dsn, "plain", "busy", "b", 3000)
	reserve := func(actor, workshop string) {
		t.Helper()
		out, err := eng.Reserve(ctx, actor, newKey(t), engine.Request{Workshop: workshop, Quantity: 1})
		if err != nil || out.Answer.Status != engine.StatusReserved {
			t.Fatalf("%s's reservation of %s = %+v, %v", actor, workshop, out, err)
		}
	}
	reserve("warm", "limited") // Prepares the statements of a reservation.
	reserve("warm", "plain")
	for _, c := range []struct {
		actor, workshop        string
		statements, roundTrips int64
	}{
		{"fresh", "limited", limitedReservationStatements, limitedReservationRoundTrips},
		{"busy", "limited", limitedReservationStatements, limitedReservationRoundTrips},
		{"fresh", "plain", plainReservationStatements, plainReservationRoundTrips},
		{"busy", "plain", plainReservationStatements, plainReservationRoundTrips},
	} {
		statements, roundTrips := counts.Statements(), counts.RoundTrips()
		reserve(c.actor, c.workshop)
		if s, r := counts.Statements()-statements, counts.RoundTrips()-roundTrips; s != c.statements || r != c.roundTrips {
			t.Errorf("a reservation of %s by %s ran %d statements in %d round trips, want %d in %d", c.workshop, c.actor, s, r, c.statements, c.roundTrips)
		}
	}
}
