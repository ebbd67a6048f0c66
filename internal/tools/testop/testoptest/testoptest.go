// Package testoptest runs the test OpenID Provider (internal/tools/testop)
// as a process of its own, for the tests of the sign-in through a
// provider.
//
// Only tests may import it; it imports nothing of reserve.
package testoptest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build builds testop into dir and returns the binary's path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "testop")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/reserve/reserve/internal/tools/testop").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build testop: %v\n%s", err, out)
	}
	return bin, nil
}

// Start runs the testop binary bin on addr (a loopback address, port 0 for
// any) until the test ends, and returns its issuer URL. Its log is shown
// when the test fails.
func Start(t testing.TB, bin, addr string) string {
	t.Helper()
	cmd := exec.Command(bin, "-listen", addr)
	var logs bytes.Buffer // Read only after Wait, when nothing writes it.
	cmd.Stderr = &logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the test provider: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("the test provider's log:\n%s", logs.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	issuer, ok := strings.CutPrefix(strings.TrimSpace(line), "issuer ")
	if err != nil || !ok {
		t.Fatalf("the test provider said %q (%v), want its issuer", line, err)
	}
	return issuer
}
