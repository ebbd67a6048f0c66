package testskip_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/testskip"
)

// TestParse reads the dependency back from a skip message as go test
// prints it, and nothing from other lines.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		line, dep string
		ok        bool
	}{
		{"    pgtest.go:50: " + testskip.Prefix + "PostgreSQL: RESERVE_PG_DSN is not set.\n", "PostgreSQL", true},
		{testskip.Prefix + "root: mounting needs root", "root", true},
		{"    x_test.go:3: run by another test\n", "", false},
		{testskip.Prefix + "no separator", "", false},
		{testskip.Prefix + ": no name", "", false},
	} {
		dep, ok := testskip.Parse(c.line)
		if dep != c.dep || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", c.line, dep, ok, c.dep, c.ok)
		}
	}
}

// recorder is a testing.TB that records a Fatal or a Skip instead of
// ending the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Skip(args ...any)  { r.skip = fmt.Sprint(args...) }

// TestMissingFailsUnderCI: a skip for a missing dependency is a skip
// without RESERVE_CI and a failure with it, so CI never counts it a pass.
func TestMissingFailsUnderCI(t *testing.T) {
	t.Setenv("RESERVE_CI", "")
	r := &recorder{TB: t}
	testskip.Missing(r, "PostgreSQL", "set %s", "RESERVE_PG_DSN")
	if r.fatal != "" || r.skip != testskip.Prefix+"PostgreSQL: set RESERVE_PG_DSN" {
		t.Errorf("without RESERVE_CI: fatal %q, skip %q; want the skip only", r.fatal, r.skip)
	}
	t.Setenv("RESERVE_CI", "1")
	r = &recorder{TB: t}
	testskip.Missing(r, "PostgreSQL", "set %s", "RESERVE_PG_DSN")
	if r.skip != "" || !strings.Contains(r.fatal, testskip.Prefix+"PostgreSQL: set RESERVE_PG_DSN") {
		t.Errorf("with RESERVE_CI: fatal %q, skip %q; want the failure only", r.fatal, r.skip)
	}
}
