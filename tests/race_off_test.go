//go:build !race

package tests

// raceEnabled says the tests run under the race detector: the daemon they
// start is built with it too.
const raceEnabled = false
