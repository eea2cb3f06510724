// Package crashpoint lets crash tests kill a process at a named step of
// its work, as a power cut or kill -9 would stop it there: Hit("name")
// kills the process (SIGKILL) when the environment variable VFSD_CRASH_AT
// names that step. Without the variable every Hit is one comparison of a
// string read once at start-up.
//
// VFSD_CRASH_AT=name kills at the first Hit of name; name:N at the Nth.
// The tests that use it run the code under test in a child process (the
// test binary again) and check what recovery finds.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the environment variable that names the step to crash at.
const Env = "VFSD_CRASH_AT"

var (
	step  string // the step to crash at; "" when none
	nth   int64  // at its nth hit
	count atomic.Int64
)

func init() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	step, nth = v, 1
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		if n, err := strconv.ParseInt(v[i+1:], 10, 64); err == nil && n > 0 {
			step, nth = v[:i], n
		}
	}
}

// Hit marks that the process reached step name. When VFSD_CRASH_AT names
// it (at this, its nth, hit) the process is killed with SIGKILL at once:
// no deferred function runs, no buffer is flushed, nothing is closed.
func Hit(name string) {
	if step == "" || name != step {
		return
	}
	if count.Add(1) == nth {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill() // SIGKILL on Unix; TerminateProcess on Windows
		}
		select {} // the kill cannot be caught: never returns
	}
}
