package pathstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// RunAsNobody runs the test binary again as ForeignUID with -test.run=run,
// from and in a directory that user can use, with env added to a minimal
// environment, and fails t if that run fails, skips or runs no test. It
// needs root (see NeedRoot).
func RunAsNobody(t *testing.T, run string, env ...string) {
	t.Helper()
	NeedRoot(t)
	dir, err := os.MkdirTemp("", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	bin := CopyTestBinary(t, dir)
	cmd := exec.Command(bin, "-test.run="+run, "-test.v")
	cmd.Dir = dir
	cmd.Env = append([]string{"TMPDIR=" + dir, "HOME=" + dir, "PATH=" + os.Getenv("PATH"), QuickRaceExit()}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: ForeignUID, Gid: ForeignUID}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: ") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("as uid %d: %v\n%s", ForeignUID, err, out)
	}
}

// CopyTestBinary copies the running test binary into dir (mode 0755) and
// returns the copy's path. The test binary may sit in a directory only its
// owner can enter; the copy runs as any user who may enter dir.
func CopyTestBinary(t testing.TB, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// QuickRaceExit is the variable GORACE as the environment sets it, plus
// atexit_sleep_ms=0, in the form NAME=value for a command's environment. A
// program built with the race detector, as the test binary is under
// go test -race, otherwise lingers a second at every exit; the tests that
// run copies of the test binary, often many times, give them this.
func QuickRaceExit() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
