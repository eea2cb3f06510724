package hostmount

// special would make a fifo under the root: Windows has none, so it writes
// a file (the tests that use it check the walk never gets there).
func (e *env) special(rel string) { e.write(rel, "fifo") }
