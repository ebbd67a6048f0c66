package pgstore

// MigrationSteps splits the SQL of a migration file as the runner does:
// one step (the whole file, in a transaction) or, for a file marked to run
// outside a transaction, one step per statement.
func MigrationSteps(sql string) []string {
	m := migration{sql: sql}
	if !m.outsideTransaction() {
		return []string{sql}
	}
	return m.statements()
}

// Queued reports how many Updates wait for a transaction to take them.
func (s *Store) Queued() int {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return len(s.groups.queue)
}

// StallAfter is how long a queued call waits while no transaction of its
// kind ends before it runs alone.
const StallAfter = stallAfter
