package daemon_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestNotifyDirStaleTempsRemovedAtStart: a daemon killed while it writes an
// event file leaves <event id>.json.tmp-* in --notify-dir. The next daemon
// removes those old enough to be no other daemon's write in progress (the
// dispatcher's StaleTempAge, ten minutes), keeps younger ones and every
// other file, and delivers as before.
func TestNotifyDirStaleTempsRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	notify := filepath.Join(dir, "events")
	if err := os.Mkdir(notify, 0o700); err != nil {
		t.Fatal(err)
	}
	plant := func(name string, age time.Duration) string {
		path := filepath.Join(notify, name)
		if err := os.WriteFile(path, []byte(`{"id":"0190`), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stale := plant("0190a1b2c3d4e5f60718293a4b5c6d7e.json.tmp-2367901841", time.Hour)
	kept := []string{
		plant("0190a1b2c3d4e5f60718293a4b5c6d7f.json.tmp-00c0ffee00c0ffee", time.Second),
		plant("0190a1b2c3d4e5f60718293a4b5c6d80.json", time.Hour),
		plant("notes.txt.tmp-1", time.Hour),
	}

	p := start(t, dir, filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--notify-dir", notify)
	var removed map[string]any
	servertest.Eventually(t, startTimeout, "the stale temporary file removed", func() bool {
		removed = p.logs.Find("removed stale temporary event files", "notify_dir", notify)
		return removed != nil
	})
	if removed["count"] != float64(1) {
		t.Errorf("log line about the removed temporary file = %v, want count 1", removed)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
	for _, path := range kept {
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(path), err)
		}
	}

	// Delivery goes on as before.
	status, _, _, err := p.socketClient().Reserve(context.Background(), engine.OperationKey(uuid.NewString()), demo)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("reserve = %d, %v", status, err)
	}
	servertest.Eventually(t, startTimeout, "the event file", func() bool {
		names, _ := filepath.Glob(filepath.Join(notify, "*.json"))
		return len(names) == 2
	})
	if code := p.stop(t); code != 0 {
		t.Errorf("reserved exited %d", code)
	}
}
