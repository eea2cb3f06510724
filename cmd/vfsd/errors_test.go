package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorsLeadWithTheCommand: where a daemon message names both an
// HTTP route and the vfsd command that does the same, a CLI user reads
// the command first: "vfsd session list (GET /v1/sessions)", never
// "GET /v1/sessions (vfsd session list)".
func TestErrorsLeadWithTheCommand(t *testing.T) {
	routeThenCommand := regexp.MustCompile(`(GET|POST|PATCH|DELETE) /v1/[^"]*\(vfsd `)
	for _, dir := range []string{"daemon", "httpapi", "hostmount", "snapshot", "ui"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for i, line := range strings.Split(string(b), "\n") {
				require.False(t, routeThenCommand.MatchString(line), "%s:%d names the route before the command: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
