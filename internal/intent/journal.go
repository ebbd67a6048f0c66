package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/reserve/reserve/internal/atomicfile"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/filelock"
	"github.com/reserve/reserve/internal/safefile"
)

// maxStateSize bounds the state file; a larger file is reported as corrupt.
const maxStateSize = 1 << 20

// lockSuffix names the lock file next to the state file. The lock is not
// taken on the state file itself because every save replaces that file (and
// with it the locked inode) by a rename.
const lockSuffix = ".lock"

// DefaultPath returns the default state file:
// $XDG_STATE_HOME/reservectl/intent.json when XDG_STATE_HOME is an absolute
// path, else ~/.local/state/reservectl/intent.json.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "reservectl", "intent.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default state file: %w", err)
	}
	return filepath.Join(home, ".local", "state", "reservectl", "intent.json"), nil
}

// Option configures a Journal.
type Option func(*Journal)

// WithClock makes the Journal take its times from now instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(j *Journal) { j.now = now }
}

// Journal is an open, locked state file. One command opens it once, keeps it
// for its whole run and closes it at the end; while it is open no other
// Journal (in this or another process) can open the same state file.
// A Journal is not safe for concurrent use by several goroutines.
type Journal struct {
	path string
	lock *filelock.Lock
	now  func() time.Time

	// loaded says whether the state file's content is known: after a Load
	// that succeeded or any successful Save or Clear.
	loaded bool
	// corrupt is the *CorruptError of the last Load, if it failed; while it
	// is set, Save and Clear refuse to touch the file.
	corrupt error
	// current is the operation key of the intent in the state file, "" for
	// none; valid when loaded.
	current engine.OperationKey
}

// Open creates the state file's directory if needed (mode 0700), takes the
// exclusive lock on <path>.lock without waiting, and removes temporary files
// that an earlier, killed save left behind. It returns an error matching
// ErrBusy when another process or Journal holds the lock, and one matching
// safefile.ErrRefused, before anything is created, when the state file is
// not a regular file or its path is not the caller's (safefile.Check), and
// when the lock file is refused likewise. The state file itself is not read
// until Load.
func Open(path string, opts ...Option) (*Journal, error) {
	if path == "" {
		return nil, errors.New("open intent journal: the state file path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open intent journal %s: %w", path, err)
	}
	// Nothing is created for a state file that would be refused.
	if err := safefile.Check(abs); err != nil {
		return nil, fmt.Errorf("open intent journal: refusing the state file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open intent journal: create the state directory: %w", err)
	}
	lock, err := filelock.TryLock(abs + lockSuffix)
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("%s: %w", abs, ErrBusy)
	}
	if err != nil {
		return nil, fmt.Errorf("open intent journal: %w", err)
	}
	j := &Journal{path: abs, lock: lock, now: time.Now}
	for _, opt := range opts {
		opt(j)
	}
	// Only a lock holder writes temporary files, and this one holds the
	// lock, so every one that exists now is left over from a killed save.
	if err := atomicfile.RemoveTemps(j.path); err != nil {
		j.Close()
		return nil, fmt.Errorf("open intent journal: %w", err)
	}
	return j, nil
}

// Path returns the absolute path of the state file.
func (j *Journal) Path() string { return j.path }

// Close releases the lock. Closing twice is harmless.
func (j *Journal) Close() error {
	if j.lock == nil {
		return nil
	}
	l := j.lock
	j.lock = nil
	if err := l.Close(); err != nil {
		return fmt.Errorf("close intent journal %s: %w", j.path, err)
	}
	return nil
}

// Load reads the state file. It returns (nil, nil) when there is no state
// file, that is no intent. A file that cannot be read, is a symbolic link or
// not a regular file (a named pipe is refused at once, never waited on), is
// not one JSON record, carries an unknown (newer) schema version, lacks a
// required member or holds an invalid value gives a *CorruptError
// (errors.Is ErrCorrupt), and the file is left exactly as it is; Save and
// Clear then refuse to touch it. A state file of another user in a
// directory anyone can write to is refused with an error matching
// safefile.ErrRefused and is not read at all: another user may have planted
// it there to have the caller send that user's key and payload.
func (j *Journal) Load() (*Intent, error) {
	if j.lock == nil {
		return nil, fmt.Errorf("load intent %s: %w", j.path, ErrClosed)
	}
	in, err := readState(j.path)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			j.loaded, j.corrupt = false, err
		}
		return nil, err
	}
	j.loaded, j.corrupt, j.current = true, nil, ""
	if in != nil {
		j.current = in.Key
	}
	return in, nil
}

// readState reads and validates the state file at path; nil means none.
func readState(path string) (*Intent, error) {
	f, err := safefile.Open(path)
	var owner *safefile.OwnerError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &owner):
		return nil, fmt.Errorf("refusing the state file: %w", err)
	case err != nil:
		return nil, &CorruptError{Path: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	in, err := decode(data)
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return in, nil
}

// decode parses and validates one state record.
func decode(data []byte) (*Intent, error) {
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return nil, errors.New("the file is empty")
	case len(data) > maxStateSize:
		return nil, fmt.Errorf("the file is larger than %d bytes", maxStateSize)
	}
	// The version is read first, leniently, so that a newer record is
	// reported as newer and not as having unknown members.
	var probe struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a valid JSON record: %w", err)
	}
	if probe.Schema > SchemaVersion {
		return nil, fmt.Errorf("schema version %d is newer than this reservectl understands (%d); use the reservectl that wrote it", probe.Schema, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in Intent
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("not a valid record: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the record")
	}
	if err := in.validate(true); err != nil {
		return nil, err
	}
	in.upgradeExpired()
	in.Payload = compact(in.Payload)
	return &in, nil
}

// Save writes in to the state file atomically and durably (temporary file in
// the same directory, fsync, rename over the state file, fsync of the
// directory), mode 0600. It sets UpdatedAt (and CreatedAt on the first
// save) and refuses an invalid intent, an intent with another operation key
// than the one in the state file (ErrOtherIntent: Clear it first), and a
// state file that Load found corrupt.
func (j *Journal) Save(in *Intent) error {
	if in == nil {
		return errors.New("save intent: no intent given")
	}
	if err := j.writable("save intent"); err != nil {
		return err
	}
	if j.current != "" && in.Key != j.current {
		return fmt.Errorf("save intent %s: %s holds intent %s: %w", in.Key, j.path, j.current, ErrOtherIntent)
	}
	prevCreated, prevUpdated, prevSchema := in.CreatedAt, in.UpdatedAt, in.Schema
	now := j.now().UTC().Round(0)
	if in.CreatedAt.IsZero() {
		in.CreatedAt = now
	}
	in.UpdatedAt = now
	in.Schema = SchemaVersion // A record of an older version is written in this one.
	var data []byte
	err := in.validate(true)
	if err == nil {
		data, err = json.MarshalIndent(in, "", "  ")
	}
	if err == nil {
		err = atomicfile.WriteFile(j.path, append(data, '\n'))
	}
	if err != nil {
		in.CreatedAt, in.UpdatedAt, in.Schema = prevCreated, prevUpdated, prevSchema
		return fmt.Errorf("save intent %s: %w", in.Key, err)
	}
	j.current = in.Key
	return nil
}

// Supersede writes next, a new intent, over settled, the settled intent
// that the state file holds, in one atomic write, so that there is no
// moment in which the file holds neither: a confirmation or release that
// starts from the hold its settled hold intent made replaces that intent
// this way. It refuses (ErrOtherIntent) when the state file does not hold
// settled, or holds it open: an open intent is never replaced.
func (j *Journal) Supersede(settled, next *Intent) error {
	if settled == nil || next == nil {
		return errors.New("supersede intent: no intent given")
	}
	if err := j.writable("supersede intent"); err != nil {
		return err
	}
	if j.current != settled.Key || !settled.Settled() {
		return fmt.Errorf("supersede intent %s with %s: %s does not hold it settled: %w", settled.Key, next.Key, j.path, ErrOtherIntent)
	}
	j.current = next.Key
	if err := j.Save(next); err != nil {
		j.current = settled.Key
		return fmt.Errorf("supersede intent %s: %w", settled.Key, err)
	}
	return nil
}

// RecordAttempt counts one more send of in and saves it. Call it before
// every send, so that a crash during the send still leaves the attempt on
// record. On error nothing is counted and nothing must be sent.
func (j *Journal) RecordAttempt(in *Intent) error {
	if in == nil {
		return errors.New("record attempt: no intent given")
	}
	in.Attempts++
	if err := j.Save(in); err != nil {
		in.Attempts--
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// Settle settles in on its authoritative outcome o (Record.Settle) and
// saves it; a zero o.SettledAt is set to now. An intent settled before on
// the same answer stays as it is. One settled on another answer is settled
// on o instead, and its earlier outcome moves to Superseded and is
// returned as lost: the server answered the same key anew, which it does
// only once it has lost the receipt of the earlier answer (its database
// was restored from a backup taken before), and its current answer is the
// one that stands.
func (j *Journal) Settle(in *Intent, o Outcome) (lost *Outcome, err error) {
	if in == nil {
		return nil, errors.New("settle: no intent given")
	}
	if in.Settled() && in.Outcome.SameAnswer(o) {
		return nil, nil
	}
	if o.SettledAt.IsZero() {
		o.SettledAt = j.now().UTC().Round(0)
	}
	o.Body = bytes.Clone(o.Body)
	if err := o.validate(in.Kind); err != nil {
		return nil, fmt.Errorf("settle intent %s: %w", in.Key, err)
	}
	prev, prevSuperseded := in.Outcome, in.Superseded
	if prev != nil {
		in.Superseded = append(slices.Clip(in.Superseded), *prev)
	}
	in.Outcome = &o
	if err := j.Save(in); err != nil {
		in.Outcome, in.Superseded = prev, prevSuperseded
		return nil, fmt.Errorf("settle: %w", err)
	}
	return prev, nil
}

// Clear removes the state file, durably (the directory is fsync'd), so that
// the next intent gets a new key. Without a state file it does nothing. It
// refuses a state file that Load found corrupt. Deciding whether an open
// intent may be discarded is the caller's business.
func (j *Journal) Clear() error {
	if err := j.writable("clear intent"); err != nil {
		return err
	}
	if err := atomicfile.Remove(j.path); err != nil {
		return fmt.Errorf("clear intent: %w", err)
	}
	j.current = ""
	return nil
}

// writable checks that the journal is open and that the state file's
// content is known and not corrupt, loading it first if needed.
func (j *Journal) writable(what string) error {
	if j.lock == nil {
		return fmt.Errorf("%s %s: %w", what, j.path, ErrClosed)
	}
	if j.corrupt != nil {
		return fmt.Errorf("%s: %w", what, j.corrupt)
	}
	if !j.loaded {
		if _, err := j.Load(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}
