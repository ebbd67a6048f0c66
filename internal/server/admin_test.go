package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

func TestOperationsViewNewestFirstFilteredAndPaginated(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	alice, bob, admin := h.TCPClient(h.Alice), h.TCPClient(h.Bob), h.TCPClient(h.Admin)
	keys := map[engine.OperationKey]string{}
	for i, c := range []*client.Client{alice, bob, alice, bob, alice} {
		key := engine.OperationKey(uuid.NewString())
		status, _, _, err := c.Reserve(ctx, key, engine.Request{Workshop: servertest.Workshop, Quantity: 1})
		if err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
		keys[key] = map[int]string{201: engine.StatusReserved, 409: engine.StatusUnavailable}[status]
	}

	var all []api.OperationRecord
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := admin.Operations(ctx, client.OperationsQuery{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Operations) > 2 {
			t.Fatalf("page of %d operations, limit 2", len(page.Operations))
		}
		all = append(all, page.Operations...)
		if cursor = page.NextCursor; cursor == "" {
			if pages != 2 {
				t.Errorf("%d pages of 2 for 5 operations, want 3", pages+1)
			}
			break
		}
	}
	if len(all) != 5 {
		t.Fatalf("listed %d operations, want 5: %+v", len(all), all)
	}
	for i, op := range all {
		if want, ok := keys[op.Operation]; !ok || op.Outcome != want || op.Kind != engine.OperationReserve {
			t.Errorf("operation %d = %+v, want outcome %q", i, op, want)
		}
		if i > 0 && op.CreatedAt.After(all[i-1].CreatedAt) {
			t.Errorf("operation %d is newer than the one before it", i)
		}
	}

	page, err := admin.Operations(ctx, client.OperationsQuery{Actor: "alice", Outcome: engine.StatusUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range page.Operations {
		if op.Actor != "alice" || op.Outcome != engine.StatusUnavailable {
			t.Errorf("filtered listing has %+v", op)
		}
	}
	if len(page.Operations) != 1 { // Capacity 3: alice's third reservation is the fifth overall.
		t.Errorf("alice has %d unavailable operations, want 1: %+v", len(page.Operations), page.Operations)
	}
	page, err = admin.Operations(ctx, client.OperationsQuery{Since: time.Now().Add(time.Hour)})
	if err != nil || len(page.Operations) != 0 {
		t.Errorf("since an hour ahead = %+v %v, want none", page, err)
	}

	if _, err := alice.Operations(ctx, client.OperationsQuery{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Errorf("alice lists operations: %v, want forbidden", err)
	}
	for _, bad := range []client.OperationsQuery{{Limit: 1001}, {Outcome: "maybe"}, {Actor: "Not An Actor"}, {Cursor: "!!"}} {
		if _, err := admin.Operations(ctx, bad); engine.ErrorCode(err) != engine.CodeRequestContract {
			t.Errorf("query %+v: %v, want request_contract", bad, err)
		}
	}
}

func TestBackupIsAConsistentDatabase(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	ctx := context.Background()
	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: servertest.Workshop, Quantity: 2}
	_, body, _, err := h.TCPClient(h.Alice).Reserve(ctx, key, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.TCPClient(h.Alice).Backup(ctx, &bytes.Buffer{}); engine.ErrorCode(err) != engine.CodeForbidden {
		t.Errorf("alice backs up: %v, want forbidden", err)
	}
	var snap bytes.Buffer
	n, err := h.TCPClient(h.Admin).Backup(ctx, &snap)
	if err != nil || n != int64(snap.Len()) || n == 0 {
		t.Fatalf("backup = %d bytes, %v", n, err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, snap.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if findings, err := store.Check(ctx); err != nil || len(findings) != 0 {
		t.Errorf("check of the backup = %v %v", findings, err)
	}
	out, err := engine.New(store).Reserve(ctx, "alice", key, req)
	if err != nil || !out.Replayed || !bytes.Equal(out.Answer.JSON(), body) {
		t.Errorf("the backup replays %s %v %v, want %s", out.Answer.JSON(), out.Replayed, err, body)
	}
}

// storeWithoutBackup hides the bolt store's Backup, like the PostgreSQL
// store.
type storeWithoutBackup struct{ engine.Store }

// serveSocket serves a server of cfg on a Unix socket until the test ends
// and returns the socket's path.
func serveSocket(t *testing.T, cfg server.Config) string {
	t.Helper()
	srv := server.New(cfg)
	socket := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeUnix(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return socket
}

func TestBackupOfAStoreWithoutOneIsNotImplemented(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	socket := serveSocket(t, server.Config{Engine: engine.New(storeWithoutBackup{h.Store}), DaemonUID: os.Getuid()})
	_, err := (&client.Client{Socket: socket}).Backup(context.Background(), &bytes.Buffer{})
	if engine.ErrorCode(err) != api.CodeNotImplemented || server.StatusOf(api.CodeNotImplemented) != http.StatusNotImplemented {
		t.Errorf("backup of a store without one: %v, want 501 not_implemented", err)
	}
}

// TestBackupWithoutDiskSpaceIs507: a store that refuses a backup because
// its file system lacks the space for the snapshot is answered 507
// insufficient_storage with its reason, not 500 internal, which is kept for
// the daemon's own faults.
func TestBackupWithoutDiskSpaceIs507(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	full := func(context.Context, func(int64), io.Writer) (int64, error) {
		return 0, fmt.Errorf("back up reserved.db: %w", engine.Errorf(engine.CodeInsufficientStorage, "only 5 MiB are free: free some space there"))
	}
	socket := serveSocket(t, server.Config{Engine: h.Engine, DaemonUID: os.Getuid(), Backup: full})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	resp, err := hc.Get("http://local" + api.PathBackup)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantProblem(t, resp, body, http.StatusInsufficientStorage, engine.CodeInsufficientStorage)
	if !bytes.Contains(body, []byte("only 5 MiB are free")) {
		t.Errorf("the 507 problem %s does not say why", body)
	}
}
