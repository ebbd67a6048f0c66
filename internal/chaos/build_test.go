package chaos_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFailpointsOnlyInFailpointBuilds proves that a production build of
// the programs links no failpoint code: only the failpoint tag brings in
// gofail's runtime.
func TestFailpointsOnlyInFailpointBuilds(t *testing.T) {
	const gofail = "go.etcd.io/gofail/runtime"
	for _, pkg := range []string{"github.com/reserve/reserve/cmd/reserved", "github.com/reserve/reserve/cmd/reservectl"} {
		deps := func(tags ...string) string {
			out, err := exec.Command("go", append(append([]string{"list", "-deps"}, tags...), pkg)...).Output()
			if err != nil {
				t.Fatalf("go list -deps %v %s: %v", tags, pkg, err)
			}
			return string(out)
		}
		if strings.Contains(deps(), gofail+"\n") {
			t.Errorf("a production build of %s links %s", pkg, gofail)
		}
		if !strings.Contains(deps("-tags", "failpoint"), gofail+"\n") {
			t.Errorf("a failpoint build of %s does not link %s", pkg, gofail)
		}
	}
}
