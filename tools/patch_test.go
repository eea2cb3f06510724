package tools_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/patch/patchtest"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// codexSuite is the Codex apply-patch scenario suite beside the repository.
var codexSuite = filepath.Join("..", "..", "shared", "conformance", "codex-apply-patch")

// TestApplyPatchConformance runs every Codex scenario, and ours, through the
// apply_patch tool on a real session and compares the whole session tree
// with the expected one. Scenario 015 expects Codex's partial application;
// vfsd is all-or-nothing, so there the tree must be the unchanged input.
func TestApplyPatchConformance(t *testing.T) {
	codex, err := patchtest.Load(codexSuite)
	require.NoError(t, err)
	if codex == nil {
		patchtest.MissingSuite(t, codexSuite)
	}
	require.Len(t, codex, 23)
	ours, err := patchtest.Load(filepath.Join("patch", "testdata", "scenarios"))
	require.NoError(t, err)
	require.NotEmpty(t, ours)
	for _, suite := range []struct {
		name      string
		scenarios []patchtest.Scenario
	}{{"codex", codex}, {"vfsd", ours}} {
		for _, sc := range suite.scenarios {
			t.Run(suite.name+"/"+sc.Name, func(t *testing.T) {
				files := map[string]string{}
				for p, c := range sc.Input {
					files[p] = string(c)
				}
				for _, d := range sc.InputDirs {
					files[d+"/"] = ""
				}
				e := toolstest.New(t, nil, files)
				before := e.State()
				r := e.Call("apply_patch", map[string]any{"patch": sc.Patch})
				wantFiles, wantDirs := sc.Expected, sc.ExpectedDirs
				if suite.name == "codex" && strings.HasPrefix(sc.Name, "015_") {
					wantFiles, wantDirs = sc.Input, sc.InputDirs
				}
				if !r.OK() {
					require.Equal(t, before, e.State(), "a failed patch changes nothing: %s", r.JSON())
				}
				gotFiles, gotDirs := sessionTree(t, e)
				require.Equal(t, normFiles(wantFiles), gotFiles, "receipt: %s", r.JSON())
				require.Equal(t, normDirs(wantDirs), gotDirs, "receipt: %s", r.JSON())
			})
		}
	}
}

func sessionTree(t *testing.T, e *toolstest.Env) (map[string]string, []string) {
	files := map[string]string{}
	dirs := []string{}
	require.NoError(t, e.S.Tree().Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		switch {
		case p.IsRoot():
		case n.IsDir():
			dirs = append(dirs, string(p))
		default:
			files[string(p)] = e.Read(string(p))
		}
		return nil
	}))
	sort.Strings(dirs)
	return files, dirs
}

func normFiles(m map[string][]byte) map[string]string {
	out := map[string]string{}
	for p, c := range m {
		out[p] = string(c)
	}
	return out
}

func normDirs(ds []string) []string {
	out := append([]string{}, ds...)
	sort.Strings(out)
	return out
}

func TestApplyPatchReceipts(t *testing.T) {
	const update = "*** Begin Patch\n*** Update File: docs/a.txt\n@@\n one\n-two\n+TWO\n three\n*** Add File: new/n.txt\n+new\n*** Delete File: README.md\n*** Update File: src/util/util.go\n*** Move to: lib/util.go\n@@\n-package util\n+package lib\n*** End Patch\n"
	runCases(t, nil, []callCase{
		{name: "all ops", tool: "apply_patch", params: map[string]any{"patch": update}, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, []any{"docs/a.txt", "new/n.txt", "README.md", "src/util/util.go", "lib/util.go"}, r["changed_paths"])
				require.Equal(t, map[string]any{"add": 1.0, "update": 1.0, "delete": 1.0, "move": 1.0}, r["ops"])
				require.Equal(t, float64(5), r["files_changed"])
				require.Equal(t, "one\nTWO\nthree\nfour\nfive\n", e.Read("docs/a.txt"))
				require.Equal(t, "package lib\n", e.Read("lib/util.go"))
				require.Contains(t, text, "+TWO")
			}},
		{name: "dry run", tool: "apply_patch", params: map[string]any{"patch": update, "dry_run": true}, status: tools.StatusOK,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, true, r["dry_run"])
				require.Equal(t, "# demo\n", e.Read("README.md"))
			}},
		{name: "input alias", tool: "apply_patch", params: map[string]any{"input": "*** Begin Patch\n*** Add File: x\n+x\n*** End Patch"}, status: tools.StatusOK},
		{name: "parse error", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"}, status: tools.StatusParseError, code: tools.CodeParseError,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, float64(2), r["line"])
			}},
		{name: "reject in second file", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Add File: ok.txt\n+ok\n*** Update File: docs/a.txt\n@@\n-nope\n+x\n*** End Patch"}, status: tools.StatusReject, code: tools.CodeReject,
			check: func(t *testing.T, e *toolstest.Env, r map[string]any, text string) {
				require.Equal(t, "docs/a.txt", r["path"])
				require.NotZero(t, r["line"])
			}},
		{name: "update missing", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch"}, status: tools.StatusReject, code: tools.CodeReject},
		{name: "escape", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch"}, status: tools.StatusInvalidInput, code: tools.CodeInvalidPath},
		{name: "escape by move", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Update File: README.md\n*** Move to: a/../../x\n@@\n-# demo\n+x\n*** End Patch"}, status: tools.StatusInvalidInput, code: tools.CodeInvalidPath},
		{name: "no patch", tool: "apply_patch", params: `{}`, status: tools.StatusInvalidInput, code: tools.CodeInvalidInput},
		{name: "binary update", tool: "apply_patch", params: map[string]any{"patch": "*** Begin Patch\n*** Update File: bin/blob.bin\n@@\n-x\n+y\n*** End Patch"}, status: tools.StatusReject, code: tools.CodeReject},
	})
}
