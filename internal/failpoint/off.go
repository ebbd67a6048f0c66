//go:build !failpoint

package failpoint

import "time"

// Enabled reports whether this is a failpoint build.
const Enabled = false

// Hit does nothing outside a failpoint build.
func Hit(string) {}

// Clock returns now outside a failpoint build.
func Clock(now func() time.Time) func() time.Time { return now }
