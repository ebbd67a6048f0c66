//go:build failpoint

package failpoint

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	gofail "go.etcd.io/gofail/runtime"
)

// Enabled reports whether this is a failpoint build.
const Enabled = true

// failpoints are the registered gofail failpoints of Points. They are
// registered at start, when gofail applies GOFAIL_FAILPOINTS to them.
var failpoints = map[string]*gofail.Failpoint{}

func init() {
	for _, name := range Points {
		failpoints[name] = gofail.NewFailpoint(name)
	}
}

// Hit evaluates the failpoint name, one of Points, and kills the process
// with SIGKILL when it yields "kill".
func Hit(name string) {
	fp := failpoints[name]
	if fp == nil {
		panic("failpoint: unknown point " + name)
	}
	v, err := fp.Acquire()
	if err != nil {
		return
	}
	if v == "kill" {
		fmt.Fprintf(os.Stderr, "failpoint kill: %s\n", name)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered to a caller that goes on.
	}
}

// Clock returns now shifted by the duration in the file EnvClock names,
// read at every call; without EnvClock it returns now. A file that is
// missing, empty or unreadable shifts nothing.
func Clock(now func() time.Time) func() time.Time {
	path := os.Getenv(EnvClock)
	if path == "" {
		return now
	}
	return func() time.Time {
		t := now()
		b, err := os.ReadFile(path)
		if err != nil {
			return t
		}
		d, err := time.ParseDuration(strings.TrimSpace(string(b)))
		if err != nil {
			return t
		}
		return t.Add(d)
	}
}
