package intent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/paths/pathstest"
)

const (
	testServer = "unix:/run/reserved/reserved.sock"
	testActor  = "alice"
	testResID  = "0190a1b2c3d4e5f60718293a4b5c6d7e"
)

var testRequest = engine.Request{Workshop: "workshop-demo", Quantity: 2}

// clock is a fixed clock that tests advance by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock {
	return &clock{t: time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)}
}

// statePath returns a state file path inside a fresh temporary directory.
func statePath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "state", "reservectl", "intent.json")
}

// mustOpen opens the journal at path and closes it when the test ends.
func mustOpen(tb testing.TB, path string, opts ...intent.Option) *intent.Journal {
	tb.Helper()
	j, err := intent.Open(path, opts...)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { j.Close() })
	return j
}

// mustNewReserve returns a fresh open reserve intent of testActor.
func mustNewReserve(tb testing.TB) *intent.Intent {
	tb.Helper()
	in, err := intent.NewReserve(testRequest, testServer, testActor)
	if err != nil {
		tb.Fatalf("NewReserve: %v", err)
	}
	return in
}

// mustLoad loads the state file and fails the test on error.
func mustLoad(tb testing.TB, j *intent.Journal) *intent.Intent {
	tb.Helper()
	in, err := j.Load()
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return in
}

// reloaded closes j, then opens the state file again, loads it and closes
// it.
func reloaded(tb testing.TB, j *intent.Journal) *intent.Intent {
	tb.Helper()
	if err := j.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	fresh := mustOpen(tb, j.Path())
	in := mustLoad(tb, fresh)
	if err := fresh.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	return in
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// dirNames lists the names in dir, sorted.
func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func reservedOutcome() intent.Outcome {
	return intent.Outcome{
		Status:     engine.StatusReserved,
		HTTPStatus: 201,
		// Not in Go's compact form, with characters json.Marshal escapes and
		// a trailing newline: the body must come back byte for byte.
		Body:          []byte("{\"status\":\"reserved\", \"reservation_id\":\"" + testResID + "\",\"workshop\":\"workshop-demo\",\"quantity\":2,\"note\":\"<&> é\"}\n"),
		ReservationID: testResID,
	}
}

func TestLoadWithoutStateFileIsNoIntent(t *testing.T) {
	j := mustOpen(t, statePath(t))
	in, err := j.Load()
	if in != nil || err != nil {
		t.Fatalf("Load without a state file = %+v, %v; want nil, nil", in, err)
	}
	if in.IsOpen() {
		t.Error("a missing intent reports itself as open")
	}
}

func TestRoundTrip(t *testing.T) {
	c := newClock()
	path := statePath(t)
	j := mustOpen(t, path, intent.WithClock(c.now))
	in := mustNewReserve(t)
	if !in.IsOpen() || in.Attempts != 0 || in.Schema != intent.SchemaVersion || in.Kind != intent.KindReserve {
		t.Fatalf("fresh intent = %+v", in)
	}
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	if in.Attempts != 1 || !in.CreatedAt.Equal(c.t) || !in.UpdatedAt.Equal(c.t) {
		t.Fatalf("after the first attempt: %+v", in)
	}

	got := reloaded(t, j)
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("reloaded intent differs:\n got %+v\nwant %+v", got, in)
	}
	if !got.IsOpen() {
		t.Error("reloaded unsettled intent is not open")
	}
	req, err := got.Request()
	if err != nil || req != testRequest {
		t.Errorf("Request() = %+v, %v; want %+v", req, err, testRequest)
	}

	c.t = c.t.Add(time.Minute)
	j = mustOpen(t, path, intent.WithClock(c.now))
	if err := j.RecordAttempt(got); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Second)
	want := reservedOutcome()
	if _, err := j.Settle(got, want); err != nil {
		t.Fatal(err)
	}
	settled := reloaded(t, j)
	if !reflect.DeepEqual(settled, got) {
		t.Fatalf("reloaded settled intent differs:\n got %+v\nwant %+v", settled, got)
	}
	if settled.IsOpen() || settled.Attempts != 2 || settled.Key != in.Key {
		t.Errorf("settled intent = %+v", settled)
	}
	if !settled.CreatedAt.Equal(in.CreatedAt) || !settled.UpdatedAt.Equal(c.t) || !settled.Outcome.SettledAt.Equal(c.t) {
		t.Errorf("times: created %v updated %v settled %v", settled.CreatedAt, settled.UpdatedAt, settled.Outcome.SettledAt)
	}
	if !bytes.Equal(settled.Outcome.Body, want.Body) {
		t.Errorf("body not verbatim:\n got %q\nwant %q", settled.Outcome.Body, want.Body)
	}
}

func TestStateFileIsReadableJSON(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	if err := j.Save(in); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "kind", "operation", "payload", "server", "actor", "attempts", "created_at", "updated_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("state file lacks member %q: %v", k, m)
		}
	}
	if _, ok := m["outcome"]; ok {
		t.Errorf("open intent has an outcome member: %v", m)
	}
	if m["operation"] != string(in.Key) || m["actor"] != testActor || m["server"] != testServer {
		t.Errorf("state file = %v", m)
	}
}

func TestFileModes(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "intent.json")
	j := mustOpen(t, path)
	for _, dir := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", dir, st.Mode().Perm())
		}
	}
	in := mustNewReserve(t)
	if err := j.Save(in); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + ".lock"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
}

func TestSaveReplacesFileWithMode0600(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	if err := j.Save(in); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("state file has mode %v after a save, want 0600", st.Mode().Perm())
	}
}

func TestSavesLeaveNoTemporaryFiles(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	for range 10 {
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Settle(in, reservedOutcome()); err != nil {
		t.Fatal(err)
	}
	want := []string{"intent.json", "intent.json.lock"}
	if got := dirNames(t, filepath.Dir(path)); !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
	// A failed save (invalid intent) leaves nothing behind either.
	bad := *in
	bad.Actor = "Not An Actor"
	if err := j.Save(&bad); err == nil {
		t.Fatal("Save of an intent with an invalid actor succeeded")
	}
	if got := dirNames(t, filepath.Dir(path)); !slices.Equal(got, want) {
		t.Errorf("after a failed save the directory holds %q, want %q", got, want)
	}
}

func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	path := statePath(t)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"intent.json.tmp-123", "intent.json.tmp-", "other.json.tmp-1", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustOpen(t, path)
	want := []string{"intent.json.lock", "notes.txt", "other.json.tmp-1"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("after Open the directory holds %q, want %q", got, want)
	}
}

func TestLockIsExclusive(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	_, err := intent.Open(path)
	if !errors.Is(err, intent.ErrBusy) {
		t.Fatalf("second Open = %v, want ErrBusy", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "another reservectl") {
		t.Errorf("busy error %q does not name the path and another reservectl", msg)
	}
	// The same path spelled differently is the same lock.
	rel, err := filepath.Rel(mustGetwd(t), path)
	if err == nil {
		if _, err := intent.Open(rel); !errors.Is(err, intent.ErrBusy) {
			t.Errorf("Open(%s) = %v, want ErrBusy", rel, err)
		}
	}
	// Another state file is not locked.
	other := mustOpen(t, filepath.Join(filepath.Dir(path), "other.json"))
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	mustOpen(t, path)
}

func mustGetwd(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	return wd
}

func TestLockSurvivesSaves(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	for range 3 {
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
		if _, err := intent.Open(path); !errors.Is(err, intent.ErrBusy) {
			t.Fatalf("Open while another journal holds the lock across saves = %v, want ErrBusy", err)
		}
	}
}

func TestClosedJournalRefusesWork(t *testing.T) {
	j := mustOpen(t, statePath(t))
	in := mustNewReserve(t)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Load(); !errors.Is(err, intent.ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
	if err := j.Save(in); !errors.Is(err, intent.ErrClosed) {
		t.Errorf("Save after Close = %v, want ErrClosed", err)
	}
	if err := j.RecordAttempt(in); !errors.Is(err, intent.ErrClosed) || in.Attempts != 0 {
		t.Errorf("RecordAttempt after Close = %v with %d attempts, want ErrClosed and 0", err, in.Attempts)
	}
	if _, err := j.Settle(in, reservedOutcome()); !errors.Is(err, intent.ErrClosed) || in.Outcome != nil {
		t.Errorf("Settle after Close = %v with outcome %+v, want ErrClosed and none", err, in.Outcome)
	}
	if err := j.Clear(); !errors.Is(err, intent.ErrClosed) {
		t.Errorf("Clear after Close = %v, want ErrClosed", err)
	}
}

// validRecord returns the bytes of a valid settled state file, as a map for
// mutation.
func validRecord(t *testing.T) map[string]any {
	t.Helper()
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Settle(in, reservedOutcome()); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCorruptStateFileIsReportedAndLeftUntouched(t *testing.T) {
	valid, err := json.Marshal(validRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(valid, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		data, err := json.MarshalIndent(m, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	outcome := func(change func(o map[string]any)) []byte {
		return with(func(m map[string]any) { change(m["outcome"].(map[string]any)) })
	}
	cases := []struct {
		name, why string
		data      []byte
	}{
		{"empty", "empty", nil},
		{"blank", "empty", []byte(" \n\t\n")},
		{"garbage", "JSON", []byte("\x00\xff garbage \x7f")},
		{"truncated", "JSON", valid[:len(valid)/2]},
		{"truncated by one byte", "JSON", valid[:len(valid)-1]},
		{"null", "schema", []byte("null")},
		{"array", "JSON", []byte("[]")},
		{"string schema", "JSON", with(func(m map[string]any) { m["schema"] = "1" })},
		{"newer schema", "newer", with(func(m map[string]any) { m["schema"] = intent.SchemaVersion + 1; m["new_member"] = true })},
		{"schema missing", "schema", with(func(m map[string]any) { delete(m, "schema") })},
		{"schema zero", "schema", with(func(m map[string]any) { m["schema"] = 0 })},
		{"schema negative", "schema", with(func(m map[string]any) { m["schema"] = -1 })},
		{"unknown member", "unknown field", with(func(m map[string]any) { m["extra"] = 1 })},
		{"superseded in schema 1", "superseded", with(func(m map[string]any) {
			m["schema"] = 1
			m["superseded"] = []any{m["outcome"]}
		})},
		{"superseded without an outcome", "superseded", with(func(m map[string]any) {
			m["superseded"] = []any{m["outcome"]}
			delete(m, "outcome")
		})},
		{"trailing data", "after top-level value", append(slices.Clone(valid), []byte(` {"x":1}`)...)},
		{"two records", "after top-level value", append(slices.Clone(valid), valid...)},
		{"kind missing", "kind", with(func(m map[string]any) { delete(m, "kind") })},
		{"unknown kind", "kind", with(func(m map[string]any) { m["kind"] = "teleport" })},
		{"key missing", "operation", with(func(m map[string]any) { delete(m, "operation") })},
		{"key uppercase", "operation key", with(func(m map[string]any) { m["operation"] = strings.ToUpper(m["operation"].(string)) })},
		{"key UUIDv1", "operation key", with(func(m map[string]any) { m["operation"] = "6ba7b810-9dad-11d1-80b4-00c04fd430c8" })},
		{"key quoted", "operation key", with(func(m map[string]any) { m["operation"] = `"` + m["operation"].(string) + `"` })},
		{"key not a string", "operation", with(func(m map[string]any) { m["operation"] = 42 })},
		{"payload missing", "payload", with(func(m map[string]any) { delete(m, "payload") })},
		{"payload null", "payload", with(func(m map[string]any) { m["payload"] = nil })},
		{"payload zero quantity", "quantity", with(func(m map[string]any) { m["payload"] = map[string]any{"workshop": "w1", "quantity": 0} })},
		{"payload extra member", "payload", with(func(m map[string]any) {
			m["payload"] = map[string]any{"workshop": "w1", "quantity": 1, "actor": "mallory"}
		})},
		{"server missing", "server", with(func(m map[string]any) { delete(m, "server") })},
		{"server relative socket", "server", with(func(m map[string]any) { m["server"] = "unix:run/reserved.sock" })},
		{"server not normalised", "server", with(func(m map[string]any) { m["server"] = "HTTP://Example.com:80/" })},
		{"server with password", "server", with(func(m map[string]any) { m["server"] = "https://bob:secret@example.com" })},
		{"actor missing", "actor", with(func(m map[string]any) { delete(m, "actor") })},
		{"actor invalid", "actor", with(func(m map[string]any) { m["actor"] = "Robert'); DROP" })},
		{"attempts negative", "attempts", with(func(m map[string]any) { m["attempts"] = -1 })},
		{"attempts fraction", "attempts", with(func(m map[string]any) { m["attempts"] = 1.5 })},
		{"created_at missing", "created_at", with(func(m map[string]any) { delete(m, "created_at") })},
		{"updated_at garbled", "yesterday", with(func(m map[string]any) { m["updated_at"] = "yesterday" })},
		{"outcome not an object", "outcome", with(func(m map[string]any) { m["outcome"] = "reserved" })},
		{"outcome status missing", "status", outcome(func(o map[string]any) { delete(o, "status") })},
		{"outcome status unknown", "status", outcome(func(o map[string]any) { o["status"] = "maybe" })},
		{"outcome reserved without id", "reservation id", outcome(func(o map[string]any) { delete(o, "reservation_id") })},
		{"outcome reserved with 200", "201", outcome(func(o map[string]any) { o["http_status"] = 200 })},
		{"outcome unavailable with id", "reservation id", outcome(func(o map[string]any) { o["status"] = "unavailable"; o["http_status"] = 409 })},
		{"outcome rejected with 500", "400 to 499", outcome(func(o map[string]any) {
			o["status"] = "rejected"
			o["http_status"] = 500
			delete(o, "reservation_id")
		})},
		{"outcome settled_at missing", "settled_at", outcome(func(o map[string]any) { delete(o, "settled_at") })},
		{"outcome body not base64", "base64", outcome(func(o map[string]any) { o["body"] = "{not base64}" })},
		{"outcome unknown member", "unknown field", outcome(func(o map[string]any) { o["replayed"] = true })},
		{"too large", "larger", append(append(slices.Clone(valid[:len(valid)-1]), bytes.Repeat([]byte(" "), 1<<20)...), '}')},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := statePath(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			j := mustOpen(t, path)
			in, err := j.Load()
			assertCorrupt(t, err, path, tc.why)
			if in != nil {
				t.Errorf("Load returned an intent with the error: %+v", in)
			}
			// The journal refuses to overwrite or remove the file.
			if err := j.Save(mustNewReserve(t)); !errors.Is(err, intent.ErrCorrupt) {
				t.Errorf("Save over a corrupt file = %v, want ErrCorrupt", err)
			}
			if err := j.Clear(); !errors.Is(err, intent.ErrCorrupt) {
				t.Errorf("Clear of a corrupt file = %v, want ErrCorrupt", err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			// So does a fresh journal that was never asked to Load.
			j = mustOpen(t, path)
			if err := j.Save(mustNewReserve(t)); !errors.Is(err, intent.ErrCorrupt) {
				t.Errorf("Save without Load over a corrupt file = %v, want ErrCorrupt", err)
			}
			if err := j.Clear(); !errors.Is(err, intent.ErrCorrupt) {
				t.Errorf("Clear without Load of a corrupt file = %v, want ErrCorrupt", err)
			}
			if got := mustRead(t, path); !bytes.Equal(got, tc.data) {
				t.Errorf("state file changed:\n got %q\nwant %q", got, tc.data)
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() {
				t.Errorf("state file was replaced or touched: %v %v → %v %v", before.ModTime(), before.Mode(), after.ModTime(), after.Mode())
			}
			want := []string{"intent.json", "intent.json.lock"}
			if got := dirNames(t, filepath.Dir(path)); !slices.Equal(got, want) {
				t.Errorf("directory holds %q, want %q", got, want)
			}
		})
	}
}

func assertCorrupt(t *testing.T, err error, path, why string) {
	t.Helper()
	if !errors.Is(err, intent.ErrCorrupt) {
		t.Fatalf("Load = %v, want ErrCorrupt", err)
	}
	var ce *intent.CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("Load error %#v is not a *CorruptError for %s", err, path)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, why) || !strings.Contains(msg, "left untouched") {
		t.Errorf("corrupt error %q should name the path, say %q and that the file is left untouched", msg, why)
	}
}

func TestUnreadableStateFileIsReportedAndLeftUntouched(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		path := statePath(t)
		if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
			t.Fatal(err)
		}
		assertRefusedAtOpen(t, path, "is a directory, not a regular file")
		if _, err := os.Stat(filepath.Join(path, "inside")); err != nil {
			t.Errorf("the directory at the state path was touched: %v", err)
		}
	})
	t.Run("permission", func(t *testing.T) {
		if os.Geteuid() == 0 {
			// Root reads files regardless of their mode: run this subtest
			// again as the unprivileged uid 65534.
			pathstest.RunAsNobody(t, "^TestUnreadableStateFileIsReportedAndLeftUntouched$/^permission$")
			return
		}
		path := statePath(t)
		j := mustOpen(t, path)
		if err := j.Save(mustNewReserve(t)); err != nil {
			t.Fatal(err)
		}
		j.Close()
		if err := os.Chmod(path, 0o000); err != nil {
			t.Fatal(err)
		}
		j = mustOpen(t, path)
		_, err := j.Load()
		assertCorrupt(t, err, path, "permission denied")
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("Load = %v, want it to unwrap to fs.ErrPermission", err)
		}
	})
}

func TestClear(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	if err := j.Clear(); err != nil {
		t.Fatalf("Clear without a state file = %v", err)
	}
	first := mustNewReserve(t)
	if err := j.RecordAttempt(first); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Settle(first, reservedOutcome()); err != nil {
		t.Fatal(err)
	}
	if err := j.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file still there after Clear: %v", err)
	}
	if in := mustLoad(t, j); in != nil {
		t.Errorf("Load after Clear = %+v, want none", in)
	}
	next := mustNewReserve(t)
	if next.Key == first.Key {
		t.Fatal("two intents got the same key")
	}
	if err := j.RecordAttempt(next); err != nil {
		t.Fatalf("saving a new intent after Clear: %v", err)
	}
	if got := reloaded(t, j); got.Key != next.Key || !got.IsOpen() {
		t.Errorf("after Clear and a new intent: %+v", got)
	}
}

func TestSaveRefusesToReplaceAnotherIntent(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	first := mustNewReserve(t)
	if err := j.RecordAttempt(first); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, path)
	second := mustNewReserve(t)
	if err := j.Save(second); !errors.Is(err, intent.ErrOtherIntent) {
		t.Fatalf("Save of another intent over an open one = %v, want ErrOtherIntent", err)
	} else if !strings.Contains(err.Error(), string(first.Key)) {
		t.Errorf("error %q does not name the recorded key", err)
	}
	// A fresh journal knows the file's intent without an explicit Load.
	j.Close()
	j = mustOpen(t, path)
	if err := j.RecordAttempt(second); !errors.Is(err, intent.ErrOtherIntent) || second.Attempts != 0 {
		t.Fatalf("RecordAttempt of another intent = %v (attempts %d), want ErrOtherIntent and 0", err, second.Attempts)
	}
	if got := mustRead(t, path); !bytes.Equal(got, before) {
		t.Errorf("state file changed by refused saves")
	}
}

func TestRecordAttemptCountsOnDisk(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	for want := 1; want <= 3; want++ {
		if err := j.RecordAttempt(in); err != nil {
			t.Fatal(err)
		}
		var m struct{ Attempts int }
		if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
			t.Fatal(err)
		}
		if m.Attempts != want || in.Attempts != want {
			t.Fatalf("after attempt %d: file says %d, memory says %d", want, m.Attempts, in.Attempts)
		}
	}
}

func TestSettle(t *testing.T) {
	c := newClock()
	path := statePath(t)
	j := mustOpen(t, path, intent.WithClock(c.now))
	in := mustNewReserve(t)
	if err := j.RecordAttempt(in); err != nil {
		t.Fatal(err)
	}

	// An inconsistent outcome is refused and nothing changes.
	before := mustRead(t, path)
	bad := reservedOutcome()
	bad.ReservationID = ""
	if _, err := j.Settle(in, bad); err == nil || !strings.Contains(err.Error(), "reservation id") {
		t.Errorf("Settle as reserved without an id = %v", err)
	}
	if !in.IsOpen() || !bytes.Equal(mustRead(t, path), before) {
		t.Error("a refused Settle changed the intent")
	}

	unavailable := intent.Outcome{Status: engine.StatusUnavailable, HTTPStatus: 409, Body: []byte(`{"status":"unavailable","workshop":"workshop-demo","quantity":2}`)}
	c.t = c.t.Add(time.Hour)
	if _, err := j.Settle(in, unavailable); err != nil {
		t.Fatal(err)
	}
	if in.IsOpen() || !in.Outcome.SettledAt.Equal(c.t) {
		t.Fatalf("settled intent = %+v", in)
	}
	settledBytes := mustRead(t, path)

	// The same answer again (a replay) changes nothing, not even the times.
	c.t = c.t.Add(time.Hour)
	if _, err := j.Settle(in, unavailable); err != nil {
		t.Errorf("settling again with the same answer = %v", err)
	}
	if !bytes.Equal(mustRead(t, path), settledBytes) {
		t.Error("settling again with the same answer rewrote the state file")
	}
	// A different answer comes only from a server that lost the receipt
	// of the first (restored from an earlier backup): it stands, and the
	// first is kept as superseded and returned as lost.
	lost, err := j.Settle(in, reservedOutcome())
	if err != nil || lost == nil || lost.Status != engine.StatusUnavailable {
		t.Fatalf("settling with another answer = %+v, %v; want the unavailable one back as lost", lost, err)
	}
	again, err := j.Load()
	if err != nil || again.Outcome.Status != engine.StatusReserved || len(again.Superseded) != 1 ||
		again.Superseded[0].Status != engine.StatusUnavailable || again.Schema != intent.SchemaVersion {
		t.Fatalf("state after a superseding answer = %+v, %v", again, err)
	}

	// Rejected is any authoritative 4xx.
	j2 := mustOpen(t, statePath(t))
	other := mustNewReserve(t)
	rejected := intent.Outcome{Status: intent.StatusRejected, HTTPStatus: 422, Body: []byte(`{"code":"request_contract"}`)}
	if _, err := j2.Settle(other, rejected); err != nil {
		t.Errorf("Settle as rejected 422 = %v", err)
	}
}

func TestCheckRetry(t *testing.T) {
	in := mustNewReserve(t)
	if err := in.CheckRetry(testServer, testActor); err != nil {
		t.Fatalf("CheckRetry with the recorded identity = %v", err)
	}
	cases := []struct {
		name, server, actor string
		want, wantNot       []string
	}{
		{"actor", testServer, "bob", []string{`"alice"`, `"bob"`}, []string{testServer}},
		{"server", "https://reserve.example", testActor, []string{testServer, "https://reserve.example"}, []string{`"alice"`}},
		{"both", "https://reserve.example", "bob", []string{`"alice"`, `"bob"`, testServer, "https://reserve.example"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := in.CheckRetry(tc.server, tc.actor)
			if !errors.Is(err, intent.ErrMismatch) {
				t.Fatalf("CheckRetry = %v, want ErrMismatch", err)
			}
			var me *intent.MismatchError
			if !errors.As(err, &me) || me.RecordedActor != testActor || me.Actor != tc.actor ||
				me.RecordedServer != testServer || me.Server != tc.server || me.Key != in.Key {
				t.Fatalf("CheckRetry error = %#v", err)
			}
			msg := err.Error()
			for _, s := range append(tc.want, string(in.Key), "nothing was sent") {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %s", msg, s)
				}
			}
			for _, s := range tc.wantNot {
				if strings.Contains(msg, s) {
					t.Errorf("message %q mentions the unchanged value %s", msg, s)
				}
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	cases := []struct {
		name            string
		req             engine.Request
		server, actor   string
		wantErrContains string
	}{
		{"zero quantity", engine.Request{Workshop: "w1", Quantity: 0}, testServer, testActor, "quantity"},
		{"bad workshop", engine.Request{Workshop: "W 1", Quantity: 1}, testServer, testActor, "workshop"},
		{"no server", testRequest, "", testActor, "server"},
		{"raw socket path", testRequest, "/run/reserved.sock", testActor, "server"},
		{"no actor", testRequest, testServer, "", "actor"},
		{"bad actor", testRequest, testServer, "Alice", "actor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := intent.NewReserve(tc.req, tc.server, tc.actor)
			if err == nil || !strings.Contains(err.Error(), tc.wantErrContains) {
				t.Errorf("NewReserve = %v, want an error about %s", err, tc.wantErrContains)
			}
		})
	}
	if _, err := intent.New("teleport", json.RawMessage(`{}`), testServer, testActor); err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("New of an unknown kind = %v", err)
	}
	in, err := intent.New(intent.KindReserve, json.RawMessage(`{"quantity":3,"workshop":"w1"}`), "https://reserve.example", "bob")
	if err != nil {
		t.Fatalf("New with a raw payload = %v", err)
	}
	if req, err := in.Request(); err != nil || req != (engine.Request{Workshop: "w1", Quantity: 3}) {
		t.Errorf("Request() = %+v, %v", req, err)
	}
	notReserve := *in
	notReserve.Kind = "cancel"
	if _, err := notReserve.Request(); err == nil {
		t.Error("Request() of a non-reserve intent succeeded")
	}
}

func TestNewKey(t *testing.T) {
	seen := map[engine.OperationKey]bool{}
	for range 100 {
		k, err := intent.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		if parsed, err := api.ParseOperationKey(string(k)); err != nil || parsed != k {
			t.Fatalf("NewKey() = %q is not a canonical UUIDv4: %v", k, err)
		}
		if seen[k] {
			t.Fatalf("NewKey() repeated %q", k)
		}
		seen[k] = true
	}
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)

	t.Setenv("XDG_STATE_HOME", "/var/state")
	if got, err := intent.DefaultPath(); err != nil || got != "/var/state/reservectl/intent.json" {
		t.Errorf("with XDG_STATE_HOME: %q, %v", got, err)
	}
	want := filepath.Join(home, ".local", "state", "reservectl", "intent.json")
	for _, xdg := range []string{"", "relative/state"} {
		t.Setenv("XDG_STATE_HOME", xdg)
		if got, err := intent.DefaultPath(); err != nil || got != want {
			t.Errorf("with XDG_STATE_HOME=%q: %q, %v; want %q", xdg, got, err, want)
		}
	}
}

func TestSocketServer(t *testing.T) {
	if got, err := intent.SocketServer("/run/reserved//x/../reserved.sock"); err != nil || got != "unix:/run/reserved/reserved.sock" {
		t.Errorf("SocketServer(absolute) = %q, %v", got, err)
	}
	got, err := intent.SocketServer("reserved.sock")
	if want := "unix:" + filepath.Join(mustGetwd(t), "reserved.sock"); err != nil || got != want {
		t.Errorf("SocketServer(relative) = %q, %v; want %q", got, err, want)
	}
	if _, err := intent.SocketServer(""); err == nil {
		t.Error("SocketServer(\"\") succeeded")
	}
}

func TestURLServer(t *testing.T) {
	good := map[string]string{
		"http://localhost:8080":                 "http://localhost:8080",
		"HTTP://LocalHost:8080/":                "http://localhost:8080",
		"https://reserve.example:443/":          "https://reserve.example",
		"http://reserve.example:80":             "http://reserve.example",
		"http://reserve.example:443":            "http://reserve.example:443",
		"https://reserve.example/base/":         "https://reserve.example/base",
		"https://reserve.example/Base//":        "https://reserve.example/Base",
		"http://[::1]:8080/":                    "http://[::1]:8080",
		"http://[::1]":                          "http://[::1]",
		"http://[fe80::1%25eth0]:8080":          "http://[fe80::1%25eth0]:8080",
		"https://127.0.0.1:8443/reserve/api/..": "https://127.0.0.1:8443/reserve/api/..",
	}
	for raw, want := range good {
		got, err := intent.URLServer(raw)
		if err != nil || got != want {
			t.Errorf("URLServer(%q) = %q, %v; want %q", raw, got, err, want)
			continue
		}
		if again, err := intent.URLServer(got); err != nil || again != got {
			t.Errorf("URLServer is not idempotent on %q: %q, %v", got, again, err)
		}
	}
	for raw, want := range map[string]string{
		"127.0.0.1:8080": `server URL "127.0.0.1:8080" has no scheme: write http://127.0.0.1:8080 (or https:// behind TLS)`,
		"[::1]:8080":     `server URL "[::1]:8080" has no scheme: write http://[::1]:8080 (or https:// behind TLS)`,
		"unix:/run/x":    `server URL "unix:/run/x": the scheme must be http or https`,
	} {
		if _, err := intent.URLServer(raw); err == nil || err.Error() != want {
			t.Errorf("URLServer(%q) = %v, want %s", raw, err, want)
		}
	}
	for _, raw := range []string{"", "localhost:8080", "ftp://x", "http://", "http:///path", "https://u:p@host", "https://host?x=1", "https://host?", "https://host#frag", "unix:/run/x", "http://%zz"} {
		if got, err := intent.URLServer(raw); err == nil {
			t.Errorf("URLServer(%q) = %q, want an error", raw, got)
		}
	}
}
