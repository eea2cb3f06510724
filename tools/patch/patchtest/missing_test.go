package patchtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTB records how MissingSuite ends a test.
type fakeTB struct{ skipped, failed string }

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Logf(string, ...any)               {}
func (f *fakeTB) Skipf(format string, args ...any)  { f.skipped = fmt.Sprintf(format, args...) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestMissingSuiteSaysSo(t *testing.T) {
	t.Setenv(RequireSharedEnv, "")
	var f fakeTB
	MissingSuite(&f, "../../shared/x")
	require.Empty(t, f.failed)
	require.Contains(t, f.skipped, "NOT RUN")
	require.Contains(t, f.skipped, "../../shared/x")

	t.Setenv(RequireSharedEnv, "1")
	f = fakeTB{}
	MissingSuite(&f, "../../shared/x")
	require.Empty(t, f.skipped)
	require.Contains(t, f.failed, "NOT RUN")
}
