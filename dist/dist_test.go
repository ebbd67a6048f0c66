package dist_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/testskip"
)

// need makes a test that cannot run without what (a tool, root) fail under
// RESERVE_CI, where CI must run it, and skip loudly otherwise.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("this test needs %s, and CI (RESERVE_CI) must run it", what)
	}
	// The dependency is named by what up to its explanation in brackets.
	dep, _, _ := strings.Cut(what, " (")
	testskip.Missing(t, dep, "this test needs %s (CI, with RESERVE_CI set, must run it)", what)
}

func haveTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// run runs name with args in dir and returns its combined output, failing
// the test if it does not succeed.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

var units = []string{"reserved.service", "reserved.socket", "reserved-tcp.socket"}

// writeUnits copies the units of dist/systemd into dir, with the ExecStart
// of reserved.service naming the program bin instead of /usr/bin/reserved.
func writeUnits(t *testing.T, dir, bin string) {
	t.Helper()
	for _, name := range units {
		text, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "reserved.service" {
			const exec = "ExecStart=/usr/bin/reserved "
			if !bytes.Contains(text, []byte(exec)) {
				t.Fatalf("%s has no %q", name, exec)
			}
			text = bytes.ReplaceAll(text, []byte(exec), []byte("ExecStart="+bin+" "))
		}
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSystemdUnitsVerify runs systemd-analyze verify on the units, which
// must pass without a single warning. verify also checks that ExecStart
// names an executable, so it runs on copies whose ExecStart is a freshly
// built reserved.
func TestSystemdUnitsVerify(t *testing.T) {
	need(t, haveTool("systemd-analyze"), "systemd-analyze (Debian package systemd)")
	dir := t.TempDir()
	bin := filepath.Join(dir, "reserved")
	run(t, "..", nil, "go", "build", "-o", bin, "./cmd/reserved")
	var paths []string
	for _, name := range units {
		paths = append(paths, filepath.Join(dir, name))
	}
	writeUnits(t, dir, bin)
	out := run(t, dir, nil, "systemd-analyze", append([]string{"verify", "--man=no"}, paths...)...)
	if out != "" {
		t.Fatalf("systemd-analyze verify is not clean:\n%s", out)
	}
}

// TestSocketUnitsNameTheirDescriptors checks the units against what
// reserved expects when socket activated: the Unix socket named "socket",
// the TCP listener named "tcp", both activating reserved.service.
func TestSocketUnitsNameTheirDescriptors(t *testing.T) {
	for _, c := range []struct{ unit, listen, name string }{
		{"reserved.socket", "ListenStream=/run/reserved/reserved.sock", "FileDescriptorName=socket"},
		{"reserved-tcp.socket", "ListenStream=127.0.0.1:8080", "FileDescriptorName=tcp"},
	} {
		text, err := os.ReadFile(filepath.Join("systemd", c.unit))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		for _, want := range []string{c.listen, c.name, "Service=reserved.service"} {
			if !slices.Contains(lines, want) {
				t.Errorf("%s has no line %q", c.unit, want)
			}
		}
		var listens []string
		for _, l := range lines {
			if strings.HasPrefix(l, "ListenStream=") {
				listens = append(listens, l)
			}
		}
		if len(listens) != 1 {
			t.Errorf("%s listens on %q; one unit names all its descriptors alike, so each needs exactly one", c.unit, listens)
		}
	}
}

// maxExposure is the highest overall exposure systemd-analyze security may
// rate reserved.service with ("OK" ends at 4.9; 2.0 is well inside it).
const maxExposure = 2.0

// exposureLine is systemd-analyze security's summary of a unit.
var exposureLine = regexp.MustCompile(`Overall exposure level for reserved\.service: (\d+\.\d+) `)

// TestServiceExposure rates the sandbox of reserved.service with
// systemd-analyze security, offline (from the unit file alone, so no
// running systemd is needed), and fails above maxExposure, listing what
// the unit leaves open.
func TestServiceExposure(t *testing.T) {
	need(t, haveTool("systemd-analyze"), "systemd-analyze (Debian package systemd)")
	// --threshold is in tenths; it makes systemd-analyze itself fail too.
	cmd := exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager",
		fmt.Sprintf("--threshold=%d", int(maxExposure*10)), filepath.Join("systemd", "reserved.service"))
	out, err := cmd.CombinedOutput()
	m := exposureLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v, no overall exposure in its output:\n%s", err, out)
	}
	exposure, perr := strconv.ParseFloat(string(m[1]), 64)
	if perr != nil {
		t.Fatal(perr)
	}
	if exposure > maxExposure || err != nil {
		var open []string
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "✗") {
				open = append(open, line)
			}
		}
		t.Errorf("systemd-analyze security rates reserved.service %.1f (%v), want at most %.1f; it leaves open:\n%s", exposure, err, maxExposure, strings.Join(open, ""))
	}
	t.Logf("systemd-analyze security: reserved.service exposure %.1f", exposure)
}
