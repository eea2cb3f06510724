package httpapi

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// TestRoutesAreDescribed: every route the API registers is described in
// api/openapi.json with the same scope, and every described operation is
// registered: the description cannot drift from the route table.
func TestRoutesAreDescribed(t *testing.T) {
	sock, err := os.MkdirTemp("", "vfsd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sock) })
	s, err := Open(context.Background(), daemon.Config{DataDir: t.TempDir(), Socket: filepath.Join(sock, "s.sock"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { s.Daemon().Close() })

	type route struct{ pattern, scope string }
	var registered, described []route
	for _, r := range s.registered {
		if r.pattern != "/" { // the catch-all answering 404 and 405
			registered = append(registered, route{r.pattern, r.scope.String()})
		}
	}
	for _, r := range api.DescribedRoutes() {
		if rt := (route{r.Pattern, r.Scope}); !slices.Contains(described, rt) {
			described = append(described, rt) // a route of every method is one operation per method
		}
	}
	require.ElementsMatch(t, registered, described, "registered routes (left) against api/openapi.json (right)")
}
