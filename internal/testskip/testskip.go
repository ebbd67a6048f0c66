// Package testskip words the skip of a test that cannot run without an
// external dependency (PostgreSQL, Chromium, root, a tool), so that ./test.sh
// can count such skips from the go test -json stream and name what is
// missing. With RESERVE_CI set it fails the test instead, because CI must
// run every test.
package testskip

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Prefix starts the message of every skip for a missing dependency; the
// dependency's name follows it, then ": " and the reason.
const Prefix = "SKIPPED for a missing dependency: "

// Missing skips tb for the want of dep (a short name such as "PostgreSQL"
// or "root", without ": " in it), saying why and how to run the test.
// With RESERVE_CI set it fails tb instead.
func Missing(tb testing.TB, dep, format string, args ...any) {
	tb.Helper()
	msg := Prefix + dep + ": " + fmt.Sprintf(format, args...)
	if os.Getenv("RESERVE_CI") != "" {
		tb.Fatal("RESERVE_CI is set, so a test must not skip: " + msg)
		return
	}
	tb.Skip(msg)
}

// Parse returns the dependency a line of test output names when the line
// holds a skip message made by Missing.
func Parse(line string) (dep string, ok bool) {
	_, rest, found := strings.Cut(line, Prefix)
	if !found {
		return "", false
	}
	dep, _, found = strings.Cut(rest, ": ")
	if !found || dep == "" {
		return "", false
	}
	return dep, true
}
