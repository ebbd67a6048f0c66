// Command testsummary reads the event stream of go test -json on its
// standard input and prints what go test prints without -json: one ok line
// per passing package and, for a failing one, the output of its failing tests
// and of the package itself (panics, races, the FAIL lines), in full. With -v
// it prints every line, as go test -v does. After the stream it prints one
// line counting the tests that skipped because a dependency is missing
// (PostgreSQL, Chromium, root, a tool): the skips worded by package testskip.
//
// It exits 1 when any test or package failed, so that a pipeline from
// go test -json fails as go test does; ./test.sh runs it that way.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/reserve/reserve/internal/testskip"
)

func main() {
	verbose := flag.Bool("v", false, "print every line of output, as go test -v does")
	flag.Parse()
	failed, err := summarize(os.Stdin, os.Stdout, *verbose, os.Getenv("RESERVE_CI") != "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// event is one line of go test -json (see go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// line is one line of a package's output and the test that printed it ("" for
// the package itself).
type line struct {
	test, text string
}

// pkgState holds a package's output until its result says what to print.
type pkgState struct {
	lines []line
	// passed holds the tests that passed or skipped: their output is not
	// printed for a failing package, as go test does not print it.
	passed map[string]bool
}

// hints says how to provide a dependency; one without a hint is named in
// the summary alone.
var hints = map[string]string{
	"PostgreSQL": "set RESERVE_PG_DSN",
	"Chromium":   "install chromium",
	"axe-core":   "run npm ci in internal/browsertest/axe",
	"root":       "run as root",
	"systemd":    "install systemd",
}

// summarize copies the stream in to out as go test would print it, then
// the summary of skips for missing dependencies; it reports whether any
// test or package failed. ci says that RESERVE_CI is set, where such tests
// fail instead of skipping.
func summarize(in io.Reader, out io.Writer, verbose, ci bool) (failed bool, err error) {
	w := bufio.NewWriter(out)
	defer func() {
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	}()
	pkgs := map[string]*pkgState{}
	state := func(pkg string) *pkgState {
		p := pkgs[pkg]
		if p == nil {
			p = &pkgState{passed: map[string]bool{}}
			pkgs[pkg] = p
		}
		return p
	}
	skips := map[string]int{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw := sc.Bytes()
		var e event
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
			// Not an event (go test wrote it as text): pass it through.
			fmt.Fprintf(w, "%s\n", raw)
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if verbose {
				fmt.Fprint(w, e.Output)
			}
			p := state(e.Package)
			p.lines = append(p.lines, line{e.Test, e.Output})
		case "pass", "skip", "fail":
			p := state(e.Package)
			if e.Action == "fail" {
				failed = true
			}
			if e.Test != "" {
				if e.Action == "skip" {
					if dep, ok := missingDependency(p, e.Test); ok {
						skips[dep]++
					}
				}
				if e.Action != "fail" {
					p.passed[e.Test] = true
				}
				continue
			}
			if !verbose {
				printPackage(w, p, e.Action == "fail")
			}
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, err
	}
	fmt.Fprintln(w, summary(skips, ci))
	// Under RESERVE_CI the skip helpers fail instead of skipping; a skip
	// for a missing dependency that gets here anyway fails the run, so
	// that CI never counts it as a pass.
	if ci && len(skips) > 0 {
		failed = true
	}
	return failed, nil
}

// missingDependency returns the dependency the skip message of test names,
// if its skip was one for a missing dependency.
func missingDependency(p *pkgState, test string) (string, bool) {
	for _, l := range p.lines {
		if l.test != test {
			continue
		}
		if dep, ok := testskip.Parse(l.text); ok {
			return dep, true
		}
	}
	return "", false
}

// printPackage prints a finished package as go test does without -v: only
// its result line when it passed; otherwise everything but the framing
// lines and the output of its tests that passed or skipped.
func printPackage(w io.Writer, p *pkgState, failed bool) {
	for _, l := range p.lines {
		switch {
		case !failed:
			if l.test == "" && (strings.HasPrefix(l.text, "ok ") || strings.HasPrefix(l.text, "?   ")) {
				fmt.Fprint(w, l.text)
			}
		case p.passed[l.test], framing(l.text):
		default:
			fmt.Fprint(w, l.text)
		}
	}
}

// framing reports whether text is a line go test prints only with -v.
func framing(text string) bool {
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(strings.TrimLeft(text, " "), prefix) {
			return true
		}
	}
	return text == "PASS\n"
}

// summary is the line counting the skips for missing dependencies, most
// frequent dependency first, with how to provide them.
func summary(skips map[string]int, ci bool) string {
	const head = "skipped for a missing dependency: "
	total := 0
	deps := make([]string, 0, len(skips))
	for dep, n := range skips {
		total += n
		deps = append(deps, dep)
	}
	if total == 0 {
		if ci {
			return head + "none (RESERVE_CI is set: a test whose dependency is missing fails instead)"
		}
		return head + "none"
	}
	sort.Slice(deps, func(i, j int) bool {
		if skips[deps[i]] != skips[deps[j]] {
			return skips[deps[i]] > skips[deps[j]]
		}
		return deps[i] < deps[j]
	})
	counts := make([]string, len(deps))
	var todo []string
	for i, dep := range deps {
		counts[i] = fmt.Sprintf("%s: %d", dep, skips[dep])
		if h, ok := hints[dep]; ok {
			todo = append(todo, h)
		}
	}
	tests := "tests"
	if total == 1 {
		tests = "test"
	}
	s := fmt.Sprintf("%s%d %s (%s)", head, total, tests, strings.Join(counts, ", "))
	if len(todo) > 0 {
		s += " — " + strings.Join(todo, " / ") + " to run them"
	}
	return s + "; .ci/run provides them all"
}
