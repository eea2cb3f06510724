package mcpserver

// SetMaxLineBytes lowers the bound on one stdio line for a test, and
// returns the function that restores it.
func SetMaxLineBytes(n int) (restore func()) {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}
