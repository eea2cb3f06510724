package patch_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/tools/patch/patchtest"
)

// codexSuite is Codex's apply-patch scenario suite, kept in the sibling
// shared checkout (see its SOURCE.md).
const codexSuite = "../../../shared/conformance/codex-apply-patch"

// TestCodexConformance runs Codex's own scenarios. Scenario 015 expects the
// hunks before a failure to stay applied; Plan is all-or-nothing, so there
// the expected tree is the unchanged input.
func TestCodexConformance(t *testing.T) {
	if _, err := os.Stat(codexSuite); err != nil {
		patchtest.MissingSuite(t, codexSuite)
	}
	scenarios := runScenarios(t, codexSuite, map[string]bool{
		"015_failure_after_partial_success_leaves_changes": true,
	})
	require.Len(t, scenarios, 23)
}

// TestScenarios runs this package's own scenarios.
func TestScenarios(t *testing.T) {
	scenarios := runScenarios(t, "testdata/scenarios", nil)
	require.GreaterOrEqual(t, len(scenarios), 10)
}

// TestCodexConformanceErrors checks how the failing Codex scenarios fail.
func TestCodexConformanceErrors(t *testing.T) {
	if _, err := os.Stat(codexSuite); err != nil {
		patchtest.MissingSuite(t, codexSuite)
	}
	scenarios, err := patchtest.Load(codexSuite)
	require.NoError(t, err)
	want := map[string]error{
		"005_rejects_empty_patch":                          errParse,
		"006_rejects_missing_context":                      patch.ErrNoMatch,
		"007_rejects_missing_file_delete":                  fs.ErrNotExist,
		"008_rejects_empty_update_hunk":                    errParse,
		"009_requires_existing_file_for_update":            fs.ErrNotExist,
		"012_delete_directory_fails":                       patch.ErrIsDir,
		"013_rejects_invalid_hunk_header":                  errParse,
		"015_failure_after_partial_success_leaves_changes": fs.ErrNotExist,
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			_, err := run(sc)
			w, fails := want[sc.Name]
			if !fails {
				require.NoError(t, err)
				return
			}
			if w == errParse {
				var pe *patch.ParseError
				require.ErrorAs(t, err, &pe)
				return
			}
			var re *patch.RejectError
			require.ErrorAs(t, err, &re)
			require.ErrorIs(t, err, w)
		})
	}
}

var errParse = errors.New("parse error")

// run parses and plans sc's patch against its input held in memory and
// applies the result there, returning the tree and the patch's error.
func run(sc patchtest.Scenario) (*patchtest.Tree, error) {
	tree := patchtest.NewTree(sc.Input, sc.InputDirs)
	p, err := patch.Parse(sc.Patch)
	if err != nil {
		return tree, err
	}
	res, err := patch.Plan(p, tree)
	if err != nil {
		return tree, err
	}
	return tree, tree.Apply(res)
}

// runScenarios runs every scenario under dir and returns them. For the
// scenarios in atomic, the expected tree is the input: the patch must fail
// and change nothing.
func runScenarios(t *testing.T, dir string, atomic map[string]bool) []patchtest.Scenario {
	t.Helper()
	scenarios, err := patchtest.Load(dir)
	require.NoError(t, err)
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			tree, err := run(sc)
			if err != nil {
				var pe *patch.ParseError
				var re *patch.RejectError
				require.True(t, errors.As(err, &pe) || errors.As(err, &re), "error of an unexpected type %T: %v", err, err)
				t.Logf("patch failed: %v", err)
			}
			files, dirs := sc.Expected, sc.ExpectedDirs
			if atomic[sc.Name] {
				require.Error(t, err)
				files, dirs = sc.Input, sc.InputDirs
			}
			require.Equal(t, texts(files), texts(tree.Files))
			if dirs == nil {
				dirs = []string{}
			}
			require.Equal(t, dirs, tree.DirList())
		})
	}
	return scenarios
}

// texts turns file contents into strings, for readable failures.
func texts(files map[string][]byte) map[string]string {
	out := make(map[string]string, len(files))
	for p, b := range files {
		out[p] = string(b)
	}
	return out
}
