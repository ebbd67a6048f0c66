package boltstore

// QueuedUpdates reports how many Updates wait for the group committer.
func QueuedUpdates(s *Store) int { return len(s.calls) }
