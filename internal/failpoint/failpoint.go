// Package failpoint names the points in reserve's own code where a
// reliability campaign may crash a process, and the clock such a campaign
// may move. Both exist only in a build with the "failpoint" tag: there a
// point is a gofail failpoint (go.etcd.io/gofail/runtime), armed through
// GOFAIL_FAILPOINTS, and the clock is the wall clock shifted by the
// duration written in the file that EnvClock names. In every other build
// Hit is an empty function the compiler removes and Clock returns the clock
// it is given, so a production binary carries no failpoint code at all.
//
// A point armed with the value "kill", e.g.
// GOFAIL_FAILPOINTS='serverAfterCommit=3*off->return("kill")', writes
// "failpoint kill: NAME" to stderr and sends the process SIGKILL, so that
// nothing after the point runs, not even a deferred function; any other
// gofail action (panic, sleep, print) does what gofail makes it do.
//
// It must not import anything of reserve's.
package failpoint

// The points. Each names the moment just before the step it precedes.
const (
	// ServerAfterCommit is after an idempotent operation's decision was
	// committed and before its answer is written.
	ServerAfterCommit = "serverAfterCommit"
	// OutboxBeforeMark is after an event was delivered and before it is
	// marked delivered.
	OutboxBeforeMark = "outboxBeforeMark"
	// ImportBeforeCheckpoint is after the answers to a batch of import
	// rows came in and before the plan that records them is rewritten.
	ImportBeforeCheckpoint = "importBeforeCheckpoint"
	// DeliveryBeforeFinish is after a delivery's channel sent it (a
	// webhook endpoint answered, the mail server took a mail) and before
	// the attempt is recorded.
	DeliveryBeforeFinish = "deliveryBeforeFinish"
)

// Points lists every point of reserve's own code.
var Points = []string{ServerAfterCommit, OutboxBeforeMark, ImportBeforeCheckpoint, DeliveryBeforeFinish}

// EnvClock names the environment variable with the clock file of a
// failpoint build: a file holding a Go duration (e.g. "25h") by which the
// clock is ahead of the wall clock. It is read at every reading of the
// clock, so a campaign moves the clock of running daemons by rewriting it.
const EnvClock = "RESERVED_FAILPOINT_CLOCK"
