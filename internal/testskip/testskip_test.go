package testskip_test

import (
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
