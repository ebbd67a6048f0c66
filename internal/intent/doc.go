// Package intent is reservectl's crash-safe journal of its pending intent:
// the one state file that holds the operation key, the payload, the server and
// the actor of the current business intent, how often it was sent, and its
// outcome once the server has answered authoritatively.
//
// The CLI writes the intent here, durably, before it sends anything, so that
// after a crash, a timeout or a lost answer "reservectl reserve --retry" sends
// the same key and payload again instead of creating a second reservation.
// Every write is atomic (temporary file, fsync, rename, fsync of the
// directory), the file is private (mode 0600), and a Journal holds an
// exclusive flock on a lock file next to the state file for as long as one
// command runs, so two reservectl processes can never both send from one
// state file. A state file that cannot be read or understood is reported as
// ErrCorrupt and never rewritten or removed. The state and lock files are
// opened by package safefile's rules: a symbolic link, a named pipe or any
// other file that is not regular, and a file of another user in a
// directory anyone can write to are refused before anything is sent. The
// atomic writes are package atomicfile's, the lock package filelock's.
//
// This package knows nothing about transport: it must not import net/http,
// cobra or any other front-end package; the CLI feeds it the server's
// answers.
package intent
