package patchtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/patch"
)

func TestLoad(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "missing"))
	require.NoError(t, err)
	require.Nil(t, s)

	root := t.TempDir()
	mk := func(p, content string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	mk("b_second/patch.txt", "P2")
	mk("b_second/expected/x/y.txt", "y")
	mk("a_first/patch.txt", "P1")
	mk("a_first/input/f.txt", "f")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a_first", "input", "empty", "deeper"), 0o755))
	mk("not_a_scenario/readme", "no patch.txt here")
	mk("loose.txt", "ignored")

	s, err = Load(root)
	require.NoError(t, err)
	require.Equal(t, []Scenario{
		{Name: "a_first", Patch: "P1",
			Input: map[string][]byte{"f.txt": []byte("f")}, InputDirs: []string{"empty", "empty/deeper"},
			Expected: map[string][]byte{}},
		{Name: "b_second", Patch: "P2",
			Input:    map[string][]byte{},
			Expected: map[string][]byte{"x/y.txt": []byte("y")}, ExpectedDirs: []string{"x"}},
	}, s)
}

func TestTree(t *testing.T) {
	tr := NewTree(map[string][]byte{"a/b/c.txt": []byte("c"), "top": []byte("t")}, []string{"e"})
	require.Equal(t, []string{"a", "a/b", "e"}, tr.DirList())

	b, err := tr.ReadFile("./a//b/c.txt")
	require.NoError(t, err)
	require.Equal(t, "c", string(b))
	b[0] = 'x'
	b, _ = tr.ReadFile("/a/b/c.txt")
	require.Equal(t, "c", string(b), "ReadFile returns a copy")
	_, err = tr.ReadFile("a/b")
	require.ErrorIs(t, err, patch.ErrIsDir)
	_, err = tr.ReadFile("/")
	require.ErrorIs(t, err, patch.ErrIsDir)
	_, err = tr.ReadFile("nope")
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, tr.Apply(&patch.Result{Changes: []patch.Change{
		{Op: patch.OpDelete, Path: "a/b/c.txt"},
		{Op: patch.OpAdd, Path: "n/m.txt", New: []byte("m")},
		{Op: patch.OpUpdate, Path: "top", MoveTo: "moved/top", New: []byte("T")},
	}}))
	require.Equal(t, map[string][]byte{"n/m.txt": []byte("m"), "moved/top": []byte("T")}, tr.Files)
	require.Equal(t, []string{"a", "a/b", "e", "moved", "n"}, tr.DirList(), "a delete leaves its directory")

	err = tr.Apply(&patch.Result{Changes: []patch.Change{{Op: patch.OpDelete, Path: "gone"}}})
	require.Error(t, err)
	err = tr.Apply(&patch.Result{Changes: []patch.Change{{Op: patch.OpAdd, Path: "n/m.txt/x"}}})
	require.Error(t, err)
	err = tr.Apply(&patch.Result{Changes: []patch.Change{{Op: patch.OpAdd, Path: "e"}}})
	require.Error(t, err)
	require.False(t, errors.Is(err, fs.ErrNotExist))
}
