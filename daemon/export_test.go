package daemon

// OpenedSessions returns how many sessions d's repository has opened
// (recovered) since d started: for tests that a restart opens none.
func OpenedSessions(d *Daemon) int64 { return d.repo.OpenCount() }
