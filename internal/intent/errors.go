package intent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reserve/reserve/internal/engine"
)

// ErrBusy means another process (another reservectl) holds the lock of the
// state file. Open returns it wrapped with the path.
var ErrBusy = errors.New("another reservectl is using this state file; wait for it to finish")

// ErrCorrupt means the state file exists but cannot be read or understood.
// Load returns it inside a *CorruptError; the file is left byte-identical.
var ErrCorrupt = errors.New("state file is unreadable or corrupt")

// ErrClosed means the Journal was used after Close.
var ErrClosed = errors.New("intent journal is closed")

// ErrMismatch means a retry would send the recorded intent as another actor
// or to another server. CheckRetry returns it inside a *MismatchError.
var ErrMismatch = errors.New("retry refused: identity or server differs from the recorded intent")

// ErrAlreadySettled means Settle was asked to replace an authoritative outcome
// with a different one. An authoritative outcome is final.
var ErrAlreadySettled = errors.New("intent already has a different authoritative outcome")

// ErrOtherIntent means Save was asked to write an intent with another
// operation key over the one in the state file. The recorded intent must be
// removed with Clear first, so that no key is ever lost by accident.
var ErrOtherIntent = errors.New("the state file holds another intent")

// CorruptError reports a state file that exists but cannot be read or
// understood. It matches ErrCorrupt with errors.Is and also unwraps to the
// underlying cause (for example fs.ErrPermission).
type CorruptError struct {
	// Path is the state file.
	Path string
	// Err is what is wrong with it.
	Err error
}

// Error names the path, the cause and what was (not) done about it.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is unreadable or corrupt: %v (left untouched; inspect it, then move it away to start over)", e.Path, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// MismatchError reports a retry whose current actor or server differs from
// the one recorded with the intent. It matches ErrMismatch with errors.Is.
type MismatchError struct {
	// Key is the operation key of the recorded intent.
	Key engine.OperationKey
	// RecordedActor and Actor are the recorded and the current actor.
	RecordedActor, Actor string
	// RecordedServer and Server are the recorded and the current server.
	RecordedServer, Server string
}

// Error names every differing value, recorded and current.
func (e *MismatchError) Error() string {
	var diffs []string
	if e.RecordedActor != e.Actor {
		diffs = append(diffs, fmt.Sprintf("it was made by actor %q but you are now %q", e.RecordedActor, e.Actor))
	}
	if e.RecordedServer != e.Server {
		diffs = append(diffs, fmt.Sprintf("it was sent to %s but you are now talking to %s", e.RecordedServer, e.Server))
	}
	return fmt.Sprintf("refusing to retry intent %s: %s; nothing was sent", e.Key, strings.Join(diffs, ", and "))
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }
