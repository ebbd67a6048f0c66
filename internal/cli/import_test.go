package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
)

// TestImportAgainstDaemonWithoutBatches: a daemon that has no batch route
// answers 404 not_found, a decided refusal of the whole batch: the import
// does not ask for a rerun that would be refused again (exit 75) but exits
// 1, says the daemon is too old, and keeps every row unclear in its plan.
func TestImportAgainstDaemonWithoutBatches(t *testing.T) {
	dir, err := os.MkdirTemp("", "imp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case api.PathWhoAmI:
			w.Header().Set("Content-Type", api.MediaJSON)
			w.Write([]byte(`{"actor":"alice","admin":false}`))
		default:
			batches++
			w.Header().Set("Content-Type", api.MediaProblem)
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"type":"about:blank","title":"Not Found","status":404,"code":"not_found","detail":"no such route"}`))
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	csv := filepath.Join(dir, "orders.csv")
	if err := os.WriteFile(csv, []byte("workshop,quantity\nw-a,1\nw-a,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"--socket", socket, "--state", filepath.Join(dir, "intent.json"), "import", "--progress", "never", csv}, &stdout, &stderr)
	if code != ExitFailure || !strings.Contains(stderr.String(), "refused a batch as a whole") || !strings.Contains(stderr.String(), "older than this reservectl") {
		t.Errorf("import = exit %d, stderr %q; want exit %d saying the daemon is too old", code, stderr.String(), ExitFailure)
	}
	if batches != 1 {
		t.Errorf("the batch was sent %d times, want once", batches)
	}
	plan, err := os.ReadFile(csv + ".plan")
	if err != nil || strings.Count(string(plan), `"status"`) != 0 {
		t.Errorf("plan %s, %v: want both rows unclear", plan, err)
	}
	if !strings.Contains(stdout.String(), "2 unclear") {
		t.Errorf("summary %q", stdout.String())
	}
}
