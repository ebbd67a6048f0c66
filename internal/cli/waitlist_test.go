package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/server"
)

const testEntryID = "0190a1b2c3d4e5f60718293a4b5c6d71"

// TestWaitlistOutcomes classifies every answer of joining and leaving a
// waiting list and checks the exit code and line the CLI ends with, and
// that the journal accepts the outcome and reads it back as the same:
// joining is a decided success (exit 0), and so is being off the list.
func TestWaitlistOutcomes(t *testing.T) {
	join := engine.Request{Workshop: "workshop-demo", Quantity: 2, Waitlist: true}
	leave := client.LeavingWaitlist(testEntryID)
	body := func(status string) string {
		return `{"status":"` + status + `","entry_id":"` + testEntryID + `","workshop":"workshop-demo","quantity":2}`
	}
	what := "entry " + testEntryID + " (2 places in workshop-demo)"
	for _, tc := range []struct {
		op     client.Operation
		status int
		body   string
		exit   int
		line   string
	}{
		{client.Reserving(join), 202, `{"status":"waiting","entry_id":"` + testEntryID + `","workshop":"workshop-demo","quantity":2,"position":3}`, ExitReserved,
			"waiting: entry " + testEntryID + ", position 3 on the waiting list of workshop-demo (2 places); when places are freed they are offered in turn"},
		{client.Reserving(join), 201, `{"status":"reserved","reservation_id":"` + testID + `","workshop":"workshop-demo","quantity":2}`, ExitReserved, "reserved 2 places in workshop-demo"},
		{client.Reserving(join), 409, `{"status":"registration_closed","workshop":"workshop-demo","quantity":2}`, ExitRejected, "registration closed"},
		{client.Reserving(testReq), 202, `{"status":"waiting","entry_id":"` + testEntryID + `","workshop":"workshop-demo","quantity":1,"position":3}`, ExitUnknown, "outcome unknown: unparseable answer"},
		{leave, 200, body("left"), ExitReserved, "left the waiting list: " + what + " is off it"},
		{leave, 409, body("already_left"), ExitReserved, "already left: " + what + " had left the waiting list before; this intent changed nothing; intent " + string(testKey) +
			" is settled and had no effect: 'reservectl waitlist leave ENTRY-ID' starts a new one"},
		{leave, 409, body("expired"), ExitUnavailable, "expired: the offer to " + what + " passed its deadline before this intent"},
		{leave, 409, body("already_reserved"), ExitRejected, "already reserved: the places offered to " + what + " were reserved before"},
		{leave, 404, `{"type":"about:blank","title":"Not Found","status":404,"code":"unknown_entry","detail":"no waiting list entry x"}`, ExitRejected, "rejected: unknown_entry: no waiting list entry x"},
	} {
		o := holdAnswer(tc.op, tc.status, tc.body)
		res := o.res
		if got := exitCode(o.err()); got != tc.exit || !strings.HasPrefix(o.line(), tc.line) {
			t.Errorf("%s answered %d %s: exit %d, line %q; want exit %d, a line starting %q", tc.op.Kind, tc.status, tc.body, got, o.line(), tc.exit, tc.line)
		}
		if o.json().EntryID != res.Answer.EntryID || o.json().Position != res.Answer.Position {
			t.Errorf("%s answered %d: --json names entry %q at %d", tc.op.Kind, tc.status, o.json().EntryID, o.json().Position)
		}
		if !o.authoritative() {
			continue
		}
		var in *intent.Intent
		var err error
		if tc.op.Kind == intent.KindLeaveWaitlist {
			in, err = intent.NewLeaveWaitlist(testEntryID, "unix:/run/reserved.sock", "root")
		} else {
			in, err = intent.NewReserve(tc.op.Request, "unix:/run/reserved.sock", "root")
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := operation(in); got != tc.op {
			t.Errorf("the %s intent sends %+v, want %+v", tc.op.Kind, got, tc.op)
		}
		checkJournaled(t, in, o, tc.exit)
	}
}

// testDaemon is a reserved on a memory store for the commands' tests: a
// Unix socket, whose caller is an admin, and a TCP listener with tokens
// for alice and bob.
type testDaemon struct {
	eng        *engine.Engine
	socket     string
	url        string
	alice, bob string
}

func startTestDaemon(t *testing.T) *testDaemon {
	t.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("/tmp", "rsvcli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &testDaemon{eng: engine.New(memstore.New(memstore.Options{})), socket: filepath.Join(dir, "d.sock")}
	if _, _, err := d.eng.PutWorkshop(ctx, "course", engine.WorkshopSpec{Capacity: 2, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	for actor, dst := range map[string]*string{"alice": &d.alice, "bob": &d.bob} {
		if *dst, err = d.eng.CreateToken(ctx, actor, false); err != nil {
			t.Fatal(err)
		}
	}
	srv := server.New(server.Config{Engine: d.eng, DaemonUID: os.Getuid()})
	sock, err := net.Listen("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.url = "http://" + tcp.Addr().String()
	go srv.ServeUnix(sock)
	go srv.ServeTCP(tcp)
	t.Cleanup(func() {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		srv.Shutdown(context.Background())
	})
	return d
}

// run runs reservectl with args against d, as the socket's caller for an
// empty token, else over TCP with it, with its own state file, and
// returns the exit code, stdout and stderr.
func (d *testDaemon) run(t *testing.T, token, state string, args ...string) (int, string, string) {
	t.Helper()
	global := []string{"--socket", d.socket, "--state", state}
	if token != "" {
		global = []string{"--server", d.url, "--token", token, "--state", state}
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), append(global, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// want checks that reservectl exits with code and that its output matches
// pattern (stdout for exit 0, else stderr), and returns the first group.
func want(t *testing.T, code int, stdout, stderr string, wantCode int, pattern string) string {
	t.Helper()
	out := stdout
	if wantCode != 0 {
		out = stderr
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if code != wantCode || m == nil {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and output matching %q", code, stdout, stderr, wantCode, pattern)
	}
	if len(m) > 1 {
		return m[1]
	}
	return ""
}

// TestWaitlistCommands runs the waiting list's commands against a daemon:
// joining a full workshop (exit 0, its entry and position), a retry that
// sends the same payload again, the own list, the organizer's list, an
// offer confirmed through its hold, leaving (the entry the state file
// made, by default) and leaving again, and the organizer's offer time.
func TestWaitlistCommands(t *testing.T) {
	d := startTestDaemon(t)
	dir := t.TempDir()
	alice, bob, root := filepath.Join(dir, "alice.json"), filepath.Join(dir, "bob.json"), filepath.Join(dir, "root.json")

	code, out, errs := d.run(t, d.alice, alice, "reserve", "--workshop", "course", "--quantity", "2", "--waitlist")
	want(t, code, out, errs, ExitReserved, `^reserved 2 places in course \(reservation ([0-9a-f]{32})\)`)
	code, out, errs = d.run(t, "", root, "admin", "workshop", "set", "course", "--offer-ttl", "2h")
	want(t, code, out, errs, ExitReserved, `, offers last 2h\n`)
	code, out, errs = d.run(t, "", root, "admin", "workshop", "set", "course", "--offer-ttl", "30s")
	want(t, code, out, errs, ExitUsage, `--offer-ttl must be whole seconds from 1m to 720h, not 30s`)

	code, out, errs = d.run(t, d.bob, bob, "reserve", "--workshop", "course", "--quantity", "1", "--waitlist")
	bobsEntry := want(t, code, out, errs, ExitReserved, `^waiting: entry ([0-9a-f]{32}), position 1 on the waiting list of course \(1 place\)`)
	code, out, errs = d.run(t, d.bob, bob, "reserve", "--retry")
	want(t, code, out, errs, ExitReserved, `^replayed: waiting: entry `+bobsEntry+`, position 1 `)
	code, out, errs = d.run(t, d.bob, bob, "reserve", "--retry", "--waitlist")
	want(t, code, out, errs, ExitUsage, `do not pass --workshop, --quantity, --waitlist or --new`)
	code, out, errs = d.run(t, d.bob, bob, "reserve", "--workshop", "course")
	want(t, code, out, errs, ExitUsage, `'reservectl waitlist' to see your place and any offer`)
	code, out, errs = d.run(t, "", root, "--json", "reserve", "--workshop", "course", "--waitlist")
	rootsEntry := want(t, code, out, errs, ExitReserved, `"outcome":"waiting".*"entry_id":"([0-9a-f]{32})","position":2`)

	code, out, errs = d.run(t, d.bob, bob, "waitlist")
	want(t, code, out, errs, ExitReserved, `(?m)^ENTRY +WORKSHOP +QTY +STATE +POSITION +HOLD +OFFER UNTIL\n`+bobsEntry+` +course +1 +waiting +1 +- +-$`)
	code, out, errs = d.run(t, d.bob, bob, "waitlist", "--status", "gone")
	want(t, code, out, errs, ExitUsage, `--status "gone" is not a state`)
	code, out, errs = d.run(t, "", root, "admin", "waitlist", "course")
	want(t, code, out, errs, ExitReserved, `(?s)^POSITION +ENTRY +ACTOR +QTY +STATE +HOLD +OFFER UNTIL +JOINED\n1 +`+bobsEntry+` +bob +1 +waiting +- +- .*\n2 +`+rootsEntry+` .*\n2 entries, 2 waiting\n$`)
	code, out, errs = d.run(t, d.bob, bob, "admin", "waitlist", "course")
	want(t, code, out, errs, ExitRejected, `forbidden`)
	code, out, errs = d.run(t, "", root, "workshops")
	want(t, code, out, errs, ExitReserved, `(?m)^ID +CAPACITY +RESERVED +HELD +AVAILABLE +WAITING +MAX +VERSION +TITLE\ncourse +2 +2 +0 +0 +2 +2 +2 +course$`)

	// alice cancels one place: it is offered to bob, as a hold he confirms.
	code, out, errs = d.run(t, d.alice, alice, "list")
	res := want(t, code, out, errs, ExitReserved, `(?m)^([0-9a-f]{32}) +course +2 +active`)
	code, out, errs = d.run(t, d.alice, alice, "cancel", "--new", res)
	want(t, code, out, errs, ExitReserved, `^cancelled reservation`)
	code, out, errs = d.run(t, d.bob, bob, "waitlist")
	hold := want(t, code, out, errs, ExitReserved, `(?m)^`+bobsEntry+` +course +1 +offered +- +([0-9a-f]{32}) +20[0-9-]+T[0-9:]+Z$`)
	want(t, code, out, errs, ExitReserved, `(?m)^accept an offer with 'reservectl confirm HOLD'; decline it with 'reservectl waitlist leave ENTRY'$`)
	code, out, errs = d.run(t, d.bob, bob, "confirm")
	want(t, code, out, errs, ExitUsage, `no hold to confirm: .* joined a waiting list \(entry `+bobsEntry+`\)`)
	code, out, errs = d.run(t, d.bob, bob, "confirm", hold)
	want(t, code, out, errs, ExitReserved, `^reserved 1 place in course \(reservation [0-9a-f]{32}\) from hold `+hold)
	if !strings.Contains(errs, "stays as it was settled; starting a new intent") {
		t.Errorf("confirm after the waiting intent: stderr %q, want the note that the waiting intent gives way", errs)
	}
	code, out, errs = d.run(t, d.bob, bob, "waitlist", "--status", "reserved")
	want(t, code, out, errs, ExitReserved, `(?m)^`+bobsEntry+` +course +1 +reserved +- +`+hold)

	// The socket's caller leaves the entry its state file made, by default.
	code, out, errs = d.run(t, "", root, "waitlist", "leave")
	want(t, code, out, errs, ExitReserved, `^left the waiting list: entry `+rootsEntry+` \(1 place in course\) is off it`)
	code, out, errs = d.run(t, "", root, "waitlist", "leave", "--retry")
	want(t, code, out, errs, ExitReserved, `^replayed: left the waiting list: entry `+rootsEntry)
	code, out, errs = d.run(t, "", root, "waitlist", "leave", rootsEntry)
	want(t, code, out, errs, ExitUsage, `is settled \(left\); nothing sent: run 'reservectl waitlist leave --new ENTRY-ID'`)
	code, out, errs = d.run(t, "", root, "waitlist", "leave", "--new", rootsEntry)
	want(t, code, out, errs, ExitReserved, `(?m)^already left: entry `+rootsEntry+` \(1 place in course\) had left the waiting list before`)
	code, out, errs = d.run(t, d.bob, bob, "waitlist", "leave", "--new", bobsEntry)
	want(t, code, out, errs, ExitRejected, `(?m)^already reserved: the places offered to entry `+bobsEntry)
	code, out, errs = d.run(t, d.alice, alice, "waitlist", "leave", "--new", bobsEntry)
	want(t, code, out, errs, ExitRejected, `(?m)^rejected: unknown_entry: `)
	code, out, errs = d.run(t, d.alice, alice, "waitlist", "leave", "nope")
	want(t, code, out, errs, ExitUsage, `"nope" is not a waiting list entry id`)
	code, out, errs = d.run(t, d.alice, filepath.Join(dir, "none.json"), "waitlist", "leave")
	want(t, code, out, errs, ExitUsage, `no waiting list entry to leave: .*none.json holds no intent`)
	code, out, errs = d.run(t, "", root, "status")
	want(t, code, out, errs, ExitReserved, `(?m)^request:  leave waiting list entry `+rootsEntry+`$`)
	code, out, errs = d.run(t, "", root, "admin", "workshop", "set", "course", "--clear", "offer-ttl")
	if code != ExitReserved || strings.Contains(out, "offers last") {
		t.Errorf("--clear offer-ttl: exit %d, %q %q; want the default back", code, out, errs)
	}
}

// TestRetryOfAJournalWrittenBeforeWaitingLists resends an open reserve
// intent exactly as reservectl wrote it before waiting lists (schema
// version 3): the payload it recorded, which does not ask to wait, so a
// full workshop answers "unavailable" and never puts it on the list.
func TestRetryOfAJournalWrittenBeforeWaitingLists(t *testing.T) {
	d := startTestDaemon(t)
	ctx := context.Background()
	if _, _, err := d.eng.PutWorkshop(ctx, "course", engine.WorkshopSpec{Capacity: 0}, nil); err != nil {
		t.Fatal(err)
	}
	who, err := (&client.Client{Socket: d.socket}).WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := intent.SocketServer(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "intent.json")
	v3 := fmt.Sprintf(`{
  "schema": 3,
  "kind": "reserve",
  "operation": "5b0e7c1a-2d3f-4a5b-9c6d-7e8f9a0b1c2d",
  "payload": {
    "workshop": "course",
    "quantity": 1
  },
  "server": %q,
  "actor": %q,
  "attempts": 1,
  "created_at": "2026-11-30T09:15:00.25Z",
  "updated_at": "2026-11-30T09:15:00.5Z"
}
`, server, who.Actor)
	if err := os.WriteFile(state, []byte(v3), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := d.run(t, "", state, "reserve", "--retry")
	want(t, code, out, errs, ExitUnavailable, `^unavailable: not enough free places in course for 1 place`)
	var rec struct {
		Schema  int             `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	data, err := os.ReadFile(state)
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("the state file: %s, %v", data, err)
	}
	if rec.Schema != intent.SchemaVersion || strings.Contains(string(rec.Payload), "waitlist") {
		t.Errorf("the state file after the retry: schema %d, payload %s; want schema %d and the payload as recorded", rec.Schema, rec.Payload, intent.SchemaVersion)
	}
	page, err := (&client.Client{Socket: d.socket}).Waitlist(ctx, engine.ListFilter{})
	if err != nil || len(page.Entries) != 0 {
		t.Errorf("the caller's waiting list entries: %+v, %v; want none", page.Entries, err)
	}
}
