package daemon_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestBuildInfo builds reserved and reservectl, from a new repository of
// this checkout's tree, with version control stamping (which GOFLAGS may
// turn off) and finds the revision, marked -modified while a tracked file
// is changed, and the time of its commit in `version` and `--version` of
// both, and the revision of the clean tree in the metric
// reserved_build_info.
func TestBuildInfo(t *testing.T) {
	t.Parallel()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatalf("the build revision test needs a git checkout, and CI (RESERVE_CI) must run it: git rev-parse: %v", err)
		}
		t.Skipf("SKIPPING the build revision test: not in a git checkout (git rev-parse: %v)", err)
	}
	// A new repository holding this tree's files, whose .git is a
	// directory: the go command finds no repository in a linked worktree,
	// whose .git is a file. A change to a tracked file makes its tree
	// modified.
	src := filepath.Join(t.TempDir(), "src")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.name=test", "-c", "user.email=test@example.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	root := strings.TrimSpace(string(top))
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for name := range strings.SplitSeq(strings.TrimSuffix(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // Deleted in the tree.
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "--quiet")
	git("add", "-A")
	git("commit", "--quiet", "-m", "tree")
	head := git("rev-parse", "HEAD")
	// The go command records the commit time in UTC, to the second.
	unix, err := strconv.ParseInt(git("show", "-s", "--format=%ct", "HEAD"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	committed := time.Unix(unix, 0).UTC().Format(time.RFC3339)
	bin := filepath.Join(t.TempDir(), "reserved")
	build := func(want string) {
		t.Helper()
		cmd := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/reserved")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build reserved with -buildvcs=true: %v\n%s", err, out)
		}
		for _, program := range []string{"reserved", "reservectl"} {
			exe := bin
			if program == "reservectl" {
				exe = bin + "ctl"
				cmd := exec.Command("go", "build", "-buildvcs=true", "-o", exe, "./cmd/reservectl")
				cmd.Dir = src
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("build reservectl with -buildvcs=true: %v\n%s", err, out)
				}
			}
			out, err := exec.Command(exe, "version").Output()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if line := "revision " + want + " (committed " + committed + ")"; len(lines) != 2 || !strings.HasPrefix(lines[0], program+" ") || lines[1] != line {
				t.Errorf("%s version = %q, want a version line and %q", program, out, line)
			}
			flag, err := exec.Command(exe, "--version").Output()
			if err != nil || string(flag) != string(out) {
				t.Errorf("%s --version = %q, %v; want what %s version prints, %q", program, flag, err, program, out)
			}
		}
	}
	f, err := os.OpenFile(filepath.Join(src, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nchanged\n")
	f.Close()
	build(head + "-modified")
	git("checkout", "--quiet", "README.md")
	build(head)
	want := head

	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := launchProgram(t, env(dir), bin, serveArgs(dir, socket)...)
	p.socket = socket
	p.waitServing(t)
	resp, body, err := p.socketClient().Do(context.Background(), http.MethodGet, "/metrics", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %v %v", resp, err)
	}
	metric := `reserved_build_info{goversion="` + runtime.Version() + `",revision="` + want + `",version="`
	found := false
	for line := range strings.SplitSeq(string(body), "\n") {
		found = found || strings.HasPrefix(line, metric) && strings.HasSuffix(line, `"} 1`)
	}
	if !found {
		t.Errorf("no line %s...\"} 1 in the metrics:\n%s", metric, body)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d", code)
	}
}
