//go:build linux && !race

package mount_test

const raceEnabled = false
