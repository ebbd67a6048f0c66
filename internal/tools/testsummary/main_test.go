package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The recorded stream holds a passing package (internal/testskip) and a
// failing one (testdata/fixture) with a passing test, a failing test, a
// failing subtest, three skips for missing dependencies and one skip for
// another reason.
const (
	stream      = "testdata/stream.json"
	fixturePkg  = "github.com/reserve/reserve/internal/tools/testsummary/testdata/fixture"
	testskipPkg = "github.com/reserve/reserve/internal/testskip"
)

// TestMain runs the command itself when the tests re-execute their binary
// to see its exit status.
func TestMain(m *testing.M) {
	if os.Getenv("TESTSUMMARY_RUN_MAIN") != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func readStream(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyPackage keeps the events of one package of the stream.
func onlyPackage(b []byte, pkg string) []byte {
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.Contains(l, `"Package":"`+pkg+`"`) {
			out.WriteString(l)
		}
	}
	return out.Bytes()
}

func TestPrintsFailuresAndCountsSkips(t *testing.T) {
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(readStream(t)), &out, false, false)
	if err != nil || !failed {
		t.Fatalf("summarize = %v, %v; want true (a test failed), nil", failed, err)
	}
	want := `    fixture_test.go:19: a failing test's log
    fixture_test.go:20: the failure itself
--- FAIL: TestFails (0.00s)
    fixture_test.go:25: a failing subtest
--- FAIL: TestSubtests/fails (0.00s)
--- FAIL: TestSubtests (0.00s)
FAIL
FAIL	` + fixturePkg + `	0.007s
ok  	` + testskipPkg + `	0.007s
skipped for a missing dependency: 3 tests (PostgreSQL: 2, Chromium: 1) — set RESERVE_PG_DSN / install chromium to run them; .ci/run provides them all
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

func TestVerbosePrintsEveryLine(t *testing.T) {
	var out bytes.Buffer
	if _, err := summarize(bytes.NewReader(readStream(t)), &out, true, false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"=== RUN   TestPasses", "a passing test's log", "run by another test", "--- PASS: TestParse", "skipped for a missing dependency: 3 tests"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("with -v the output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestPassingPackageWithoutSkips(t *testing.T) {
	in := onlyPackage(readStream(t), testskipPkg)
	for _, c := range []struct {
		ci   bool
		want string
	}{
		{false, "ok  \t" + testskipPkg + "\t0.007s\nskipped for a missing dependency: none\n"},
		{true, "ok  \t" + testskipPkg + "\t0.007s\nskipped for a missing dependency: none (RESERVE_CI is set: a test whose dependency is missing fails instead)\n"},
	} {
		var out bytes.Buffer
		failed, err := summarize(bytes.NewReader(in), &out, false, c.ci)
		if err != nil || failed {
			t.Fatalf("summarize = %v, %v; want false, nil", failed, err)
		}
		if out.String() != c.want {
			t.Errorf("with RESERVE_CI %v the output is\n%s\nwant\n%s", c.ci, out.String(), c.want)
		}
	}
}

// TestExitStatus runs the command on the stream: it exits 1 when a test
// failed and 0 when all passed, so ./test.sh fails with the tests.
func TestExitStatus(t *testing.T) {
	whole := readStream(t)
	for _, c := range []struct {
		name string
		in   []byte
		want int
	}{
		{"a failing package", whole, 1},
		{"the passing package alone", onlyPackage(whole, testskipPkg), 0},
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TESTSUMMARY_RUN_MAIN=1", "RESERVE_CI=")
		cmd.Stdin = bytes.NewReader(c.in)
		out, err := cmd.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.want {
			t.Errorf("%s: exit status %d, want %d; output:\n%s", c.name, code, c.want, out)
		}
		if !strings.Contains(string(out), "skipped for a missing dependency: ") {
			t.Errorf("%s: no summary in the output:\n%s", c.name, out)
		}
	}
}

// TestSkipsFailUnderCI: a skip for a missing dependency fails the run when
// RESERVE_CI is set, and only then.
func TestSkipsFailUnderCI(t *testing.T) {
	in := `{"Action":"output","Package":"p","Test":"TestX","Output":"    x_test.go:1: SKIPPED for a missing dependency: PostgreSQL: no server\n"}
{"Action":"skip","Package":"p","Test":"TestX"}
{"Action":"pass","Package":"p","Elapsed":0.01}
`
	for _, ci := range []bool{false, true} {
		var out bytes.Buffer
		failed, err := summarize(strings.NewReader(in), &out, false, ci)
		if err != nil || failed != ci {
			t.Errorf("with RESERVE_CI %v: summarize = %v, %v; want %v, nil\n%s", ci, failed, err, ci, out.String())
		}
	}
}
