package browsertest_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// waitTimeout bounds every wait of these tests; it only ends a hung test
// clearly, no test relies on how long anything takes.
const waitTimeout = 30 * time.Second

// demo is the workshop a new database gets: capacity 3, at most 2 places
// per reservation.
const demo = "workshop-demo"

// daemon is a running reserved process.
type daemon struct {
	url    string // The TCP base URL, from the "reserved is serving" log line.
	logs   *servertest.LogBuffer
	socket *client.Client // The test's own uid: the owner, an admin.
}

// startDaemon runs reserved with fault injection on a fresh database, a
// socket in a short directory and a random loopback port, until the test
// ends. Without a browser it skips (or fails in CI) first.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	return startDaemonWith(t)
}

// startDaemonWith is startDaemon with extra flags of reserved serve.
func startDaemonWith(t *testing.T, extra ...string) *daemon {
	t.Helper()
	needBrowser(t) // Every test here drives a browser: skip before starting anything.
	dir := t.TempDir()
	sock := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	d := &daemon{logs: &servertest.LogBuffer{}, socket: &client.Client{Socket: sock}}
	cmd := exec.Command(reservedBin, append([]string{"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", sock,
		"--listen", "127.0.0.1:0", "--log-format", "json", "--enable-fault-injection"}, extra...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start reserved: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("reserved's log:\n%s", d.logs)
		}
	})
	servertest.Eventually(t, waitTimeout, "reserved serving", func() bool {
		select {
		case <-done:
			t.Fatalf("reserved exited before serving:\n%s", d.logs)
		default:
		}
		r := d.logs.Find("reserved is serving")
		if addr, _ := r["tcp"].(string); addr != "" {
			d.url = "http://" + addr
		}
		return r != nil
	})
	return d
}

func (d *daemon) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// loginURL asks the daemon over its socket for a one-time login link for
// actor ("" for the test's own actor).
func (d *daemon) loginURL(t *testing.T, actor string) string {
	t.Helper()
	link, err := d.socket.LoginLink(d.ctx(t), actor)
	if err != nil {
		t.Fatalf("login link for %q: %v", actor, err)
	}
	return link.URL
}

// arm arms an injected fault for the next reservation answer.
func (d *daemon) arm(t *testing.T, fault string) {
	t.Helper()
	if err := d.socket.ArmFault(d.ctx(t), api.Fault{Fault: fault, Count: 1}); err != nil {
		t.Fatalf("arm %s: %v", fault, err)
	}
}

// putWorkshop creates or updates a workshop as the admin on the socket.
func (d *daemon) putWorkshop(t *testing.T, id string, capacity, maxQuantity int) {
	t.Helper()
	spec := engine.WorkshopSpec{Capacity: capacity, MaxQuantity: maxQuantity, Title: "Workshop " + id}
	if _, _, err := d.socket.PutWorkshop(d.ctx(t), id, spec, nil); err != nil {
		t.Fatalf("put workshop %s: %v", id, err)
	}
}

// reserved returns how many places of workshop id are reserved: the
// daemon's own count of what the browser achieved.
func (d *daemon) reserved(t *testing.T, id string) int {
	t.Helper()
	w, err := d.socket.Workshop(d.ctx(t), id)
	if err != nil {
		t.Fatalf("workshop %s: %v", id, err)
	}
	return w.Reserved
}

// receipt returns the daemon's stored answer for an operation key of the
// test's own actor.
func (d *daemon) receipt(t *testing.T, key string) api.OperationView {
	t.Helper()
	v, err := d.socket.Operation(d.ctx(t), engine.OperationKey(key))
	if err != nil {
		t.Fatalf("receipt of %s: %v", key, err)
	}
	return v
}

// requests returns how many requests of route reached the daemon, by
// outcome, from its /metrics (served to anyone on the socket).
func (d *daemon) requests(t *testing.T, route string) map[string]int {
	t.Helper()
	resp, body, err := d.socket.Do(d.ctx(t), http.MethodGet, api.PathMetrics, nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %v %v", resp, err)
	}
	out := map[string]int{}
	prefix := `reserved_http_requests_total{`
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, `route="`+route+`"`) {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, prefix), "} ")
		_, outcome, _ := strings.Cut(labels, `outcome="`)
		outcome, _, _ = strings.Cut(outcome, `"`)
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[outcome] += int(n)
	}
	return out
}

// posts returns how many reservation POSTs reached the daemon.
func (d *daemon) posts(t *testing.T) int {
	t.Helper()
	n := 0
	for _, v := range d.requests(t, "POST "+api.PathReservations) {
		n += v
	}
	return n
}
