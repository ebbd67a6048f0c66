package daemon_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// loadAnswer is one authoritative answer a load client got.
type loadAnswer struct {
	key    engine.OperationKey
	req    engine.Request
	status int
	body   []byte
}

// answers collects the answers of concurrent load clients.
type answers struct {
	mu   sync.Mutex
	list []loadAnswer
}

func (a *answers) add(x loadAnswer) {
	a.mu.Lock()
	a.list = append(a.list, x)
	a.mu.Unlock()
}

func (a *answers) snapshot() []loadAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]loadAnswer(nil), a.list...)
}

// TestBackupUnderLoadRestoresRecordedKeys takes a backup with reservectl
// admin backup while eight clients keep reserving, checks it with reserved
// check, starts a new daemon on it, and replays every key that was answered
// before the backup began: each gets its original status and byte-identical
// body, marked replayed. A key first used after the backup is unknown to the
// restored daemon.
func TestBackupUnderLoadRestoresRecordedKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := start(t, dir, socket, "--no-demo")
	c := p.socketClient()
	for id, capacity := range map[string]int{"w-big": 1_000_000, "w-tiny": 20} {
		if _, _, err := c.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}

	var got answers
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			lc := &client.Client{Socket: socket}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				req := engine.Request{Workshop: "w-big", Quantity: 1 + n%2}
				if (i+n)%5 == 0 {
					req = engine.Request{Workshop: "w-tiny", Quantity: 1}
				}
				key := engine.OperationKey(uuid.NewString())
				status, body, _, err := lc.Reserve(ctx, key, req)
				if err != nil {
					t.Errorf("load: reserve: %v", err)
					return
				}
				got.add(loadAnswer{key: key, req: req, status: status, body: body})
			}
		})
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	servertest.Eventually(t, startTimeout, "300 answers under load", func() bool { return len(got.snapshot()) >= 300 })

	before := got.snapshot()
	backup := filepath.Join(dir, "backup.db")
	var stdout, stderr bytes.Buffer
	if code := cli.Run(ctx, []string{"--socket", socket, "admin", "backup", backup}, &stdout, &stderr); code != 0 {
		t.Fatalf("reservectl admin backup exited %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "wrote a consistent backup of reserved to "+backup) {
		t.Errorf("backup said %q", stdout.String())
	}
	during := len(got.snapshot()) - len(before)
	// One key surely first used after the snapshot was taken.
	afterKey := engine.OperationKey(uuid.NewString())
	if status, body, _, err := c.Reserve(ctx, afterKey, engine.Request{Workshop: "w-big", Quantity: 1}); err != nil || status != http.StatusCreated {
		t.Fatalf("reserve after the backup = %d %s %v", status, body, err)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d answers before the backup, %d while it ran, %d in all", len(before), during, len(got.snapshot()))
	if code := p.stop(t); code != 0 {
		t.Fatalf("reserved exited %d", code)
	}

	out, err := exec.Command(reservedBin, "check", "--db", backup).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no findings") {
		t.Fatalf("reserved check --db %s: %v\n%s", backup, err, out)
	}

	// Restore: a new daemon on a copy of the backup.
	restored := t.TempDir()
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "reserved.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	socket2 := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p2 := start(t, restored, socket2, "--no-demo")
	c2 := p2.socketClient()
	for _, a := range before {
		status, body, replayed, err := c2.Reserve(ctx, a.key, a.req)
		if err != nil || status != a.status || !replayed || !bytes.Equal(body, a.body) {
			t.Fatalf("key %s after the restore = %d %s replayed=%v %v, want the original %d %s", a.key, status, body, replayed, err, a.status, a.body)
		}
	}
	if _, err := c2.Operation(ctx, afterKey); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("a key first used after the backup: GET operation = %v, want unknown_operation", err)
	}
	if code := p2.stop(t); code != 0 {
		t.Fatalf("restored reserved exited %d", code)
	}
	if out, err := exec.Command(reservedBin, "check", "--db", filepath.Join(restored, "reserved.db")).CombinedOutput(); err != nil {
		t.Fatalf("reserved check after the replays: %v\n%s", err, out)
	}
}
