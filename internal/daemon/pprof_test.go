package daemon_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestPprofOnlyOnLoopback: a --pprof-listen address that is not on
// loopback is a usage error (exit status 2, one line) before anything is
// made or served: no socket, no database.
func TestPprofOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "[::]:6060", "192.0.2.1:6060", "reserve.example:6060"} {
		dir := t.TempDir()
		socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
		p := launch(t, env(dir), append(serveArgs(dir, socket), "--pprof-listen", addr)...)
		want := `reserved: --pprof-listen "` + addr + `" is not a loopback address: the Go profiles have no authentication, so they are served only on loopback, e.g. --pprof-listen 127.0.0.1:6060 or [::1]:6060` + "\n"
		if code := p.wait(t); code != 2 || p.logs.String() != want {
			t.Errorf("--pprof-listen %s: exit %d, %q; want exit 2 and %q", addr, code, p.logs, want)
		}
		mustNotExist(t, socket)
		mustNotExist(t, filepath.Join(dir, "reserved.db"))
	}
}

// TestPprofChecksHostAndHidesTheCommandLine starts reserved with Go
// profiles on a loopback port: a request whose Host names neither a
// loopback host nor an --allowed-host is refused as on the API's loopback
// listener (a web page that rebinds its name to 127.0.0.1 gets nothing),
// and /debug/pprof/cmdline, which would show every argument, a --dsn
// password included, is not served.
func TestPprofChecksHostAndHidesTheCommandLine(t *testing.T) {
	const marker = "cmdline-secret-marker"
	dir := filepath.Join(t.TempDir(), marker)
	p := start(t, dir, filepath.Join(servertest.ShortTempDir(t), "r.sock"), "--pprof-listen", "localhost:0", "--allowed-host", "reserve.test")
	addr, _ := p.logs.Find("serving Go profiles without authentication")["pprof"].(string)
	if !strings.HasPrefix(addr, "127.0.0.1:") && !strings.HasPrefix(addr, "[::1]:") {
		t.Fatalf("pprof listens on %q, want a loopback address", addr)
	}
	get := func(path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, host := range []string{addr, "localhost", "reserve.test"} {
		if code, body := get("/debug/pprof/", host); code != http.StatusOK || !strings.Contains(body, "goroutine") {
			t.Errorf("GET /debug/pprof/ with Host %s = %d %.80q, want 200 and the profiles", host, code, body)
		}
	}
	for _, host := range []string{"attacker.example", "attacker.example:" + strings.Split(addr, ":")[1]} {
		code, body := get("/debug/pprof/goroutine?debug=1", host)
		var problem api.Problem
		if err := json.Unmarshal([]byte(body), &problem); err != nil || code != http.StatusForbidden || problem.Code != engine.CodeForbidden || strings.Contains(body, "goroutine profile") {
			t.Errorf("GET /debug/pprof/goroutine with Host %s = %d %.200q, want 403 forbidden", host, code, body)
		}
	}
	if code, body := get("/debug/pprof/cmdline", addr); code != http.StatusNotFound || strings.Contains(body, marker) {
		t.Errorf("GET /debug/pprof/cmdline = %d %q, want 404 without the command line", code, body)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}

// TestDSNPasswordIsNeverShown: a --dsn or RESERVED_DSN password appears
// nowhere reserved writes: not in its help (where the environment would
// be the flag's default), not in a failed start, not in what check says,
// not in the driver's complaint about a DSN it cannot parse.
func TestDSNPasswordIsNeverShown(t *testing.T) {
	// Passwords the driver masks only in part end in tail.
	const secret, tail = "s3cr3t-pw", "t4il-0f-pw"
	t.Setenv("RESERVED_DSN", "postgres://reserve:"+secret+"@127.0.0.1:1/reserve")
	for _, args := range [][]string{
		{"serve", "--help"},
		{"check", "--help"},
		{"serve", "--no-such-flag"},
		{"check"},
		{"check", "--dsn", "postgres://reserve:" + secret + "@127.0.0.1:1/reserve"},
		{"check", "--dsn", "host=127.0.0.1 port=abc password = " + secret},
		{"check", "--dsn", "host=127.0.0.1 password='" + secret + " " + tail},
		{"check", "--dsn", "postgres://reserve:" + secret + "@" + tail + "@127.0.0.1:abc/reserve"},
		{"migrate", "--from-db", filepath.Join(t.TempDir(), "none.db"), "--to-dsn", "postgres://reserve:" + secret + "@127.0.0.1:1/reserve"},
	} {
		code, stdout, stderr := run(t, args...)
		for _, fragment := range []string{secret, tail} {
			if strings.Contains(stdout+stderr, fragment) {
				t.Errorf("reserved %s (exit %d) shows %q:\n%s%s", strings.Join(args, " "), code, fragment, stdout, stderr)
			}
		}
	}

	// A real daemon that cannot reach its database says why, without
	// the password.
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := launch(t, env(dir), "serve", "--socket", socket, "--listen", "", "--dsn", "postgres://reserve:"+secret+"@127.0.0.1:1/reserve")
	if code := p.wait(t); code == 0 || strings.Contains(p.logs.String(), secret) || !strings.Contains(p.logs.String(), `database "reserve" on 127.0.0.1:1`) {
		t.Errorf("a daemon whose database is unreachable: exit %d, said %q", code, p.logs)
	}
}
