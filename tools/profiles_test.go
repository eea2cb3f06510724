package tools_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the profiles")

// TestProfilesGolden holds every profile's rendered tool list and prompt to
// the files in testdata/profiles; run with -update after a deliberate
// change and review the diff.
func TestProfilesGolden(t *testing.T) {
	for _, name := range tools.Profiles() {
		t.Run(name, func(t *testing.T) {
			r, err := tools.Render(name)
			require.NoError(t, err)
			require.True(t, json.Valid(r.Tools))
			for file, got := range map[string][]byte{name + ".tools.json": r.Tools, name + ".prompt.md": []byte(r.Prompt)} {
				path := filepath.Join("testdata", "profiles", file)
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, got, 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run go test ./tools -run TestProfilesGolden -update to create it")
				require.Equal(t, string(want), string(got), "%s changed; run with -update if that is intended", path)
			}
		})
	}
	_, err := tools.Render("nope")
	require.Error(t, err)
}

// TestSchemasGolden holds every tool's parameter and receipt schemas.
func TestSchemasGolden(t *testing.T) {
	got, err := tools.Schemas()
	require.NoError(t, err)
	path := filepath.Join("testdata", "schemas.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./tools -run TestSchemasGolden -update to create it")
	require.Equal(t, string(want), string(got), "%s changed; run with -update if that is intended", path)
}

func TestProfileToolsExist(t *testing.T) {
	for _, name := range tools.Profiles() {
		p, err := tools.LookupProfile(name)
		require.NoError(t, err)
		for _, tool := range p.Tools {
			if tool == tools.ConsolidatedTool {
				continue
			}
			_, ok := tools.Lookup(tool)
			require.True(t, ok, "profile %s lists %s, which is not registered", name, tool)
		}
	}
}

func TestConsolidatedTool(t *testing.T) {
	e := toolstest.New(t, nil, baseFiles)
	r := e.Call(tools.ConsolidatedTool, `{"action":"read_file","path":"README.md"}`)
	require.True(t, r.OK(), "%s", r.JSON())
	require.Equal(t, "# demo\n", toolstest.Receipt(t, r)["inline_text"])
	for _, bad := range []string{`{}`, `{"action":""}`, `{"action":7}`, `[]`} {
		r = e.Call(tools.ConsolidatedTool, bad)
		require.Equal(t, tools.StatusInvalidInput, r.Status(), bad)
	}
	r = e.Call(tools.ConsolidatedTool, `{"action":"nope"}`)
	require.Equal(t, "unknown_tool", toolstest.Receipt(t, r)["error_code"])
}
