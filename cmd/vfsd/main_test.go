package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("2000, 50000")
	require.NoError(t, err)
	require.Equal(t, []int{2000, 50000}, got)
	for _, bad := range []string{"", "x", "0", "-5", "10,,20"} {
		_, err := parseSizes(bad)
		require.Error(t, err, bad)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "cow", "--files", "nope"},
		{"bench", "cow", "--size-kb", "0"},
		{"bench", "cow", "--no-such-flag"},
		{"bench", "cow", "extra-arg"},
		{"bench", "reopen-read", "--store", "s", "--sessions", "d", "--session", "x"},
	} {
		root := newRoot()
		root.SetArgs(args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		require.Error(t, err, args)
		var ue usageError
		require.True(t, errors.As(err, &ue), "%v: want a usage error (exit 2), got %v", args, err)
	}
}

// run executes the CLI with args and stdin, returning stdout and the error.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	root.SetArgs(args)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetIn(strings.NewReader(stdin))
	err := root.Execute()
	return out.String(), err
}

func TestToolOnADirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello world\n"), 0o644))

	out, err := run(t, "", "tool", "--dir", dir, "edit_file", "--params", `{"path":"a.txt","old_string":"world","new_string":"there"}`)
	require.NoError(t, err)
	require.Contains(t, out, `"status":"ok"`)
	data, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.Equal(t, "hello there\n", string(data), "the change is applied back")

	out, err = run(t, "", "tool", "--dir", dir, "edit_file", "--params", `{"path":"a.txt","old_string":"there","new_string":"x"}`, "--dry-run")
	require.NoError(t, err)
	require.Contains(t, out, `"status":"ok"`)
	data, _ = os.ReadFile(filepath.Join(dir, "a.txt"))
	require.Equal(t, "hello there\n", string(data), "--dry-run applies nothing")

	out, err = run(t, "", "tool", "--dir", dir, "read_file", "--params", `{"path":"missing"}`)
	require.ErrorIs(t, err, errNotOK)
	require.Contains(t, out, `"status":"not_found"`)

	_, err = run(t, "", "tool", "edit_file")
	var ue usageError
	require.ErrorAs(t, err, &ue, "--dir is required")
}

func TestApplyPatchOnADirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644))
	good := "*** Begin Patch\n*** Add File: sub/b.txt\n+bee\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n"
	out, err := run(t, good, "apply-patch", "--dir", dir)
	require.NoError(t, err)
	require.Contains(t, out, `"files_changed":2`)
	data, _ := os.ReadFile(filepath.Join(dir, "sub/b.txt"))
	require.Equal(t, "bee\n", string(data))

	bad := "*** Begin Patch\n*** Add File: c.txt\n+c\n*** Update File: a.txt\n@@\n-nope\n+x\n*** End Patch\n"
	out, err = run(t, bad, "apply-patch", "--dir", dir)
	require.ErrorIs(t, err, errNotOK)
	require.Contains(t, out, `"status":"reject"`)
	_, err = os.Stat(filepath.Join(dir, "c.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "all or nothing")
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "123": 123, "16GiB": 16 << 30, "16G": 16 << 30, "512mb": 512 << 20, "1k": 1024, "2TiB": 2 << 40} {
		got, err := parseByteSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		b := byteSize(got)
		back, err := parseByteSize(b.String())
		require.NoError(t, err)
		require.Equal(t, got, back, "String parses back")
	}
	for _, bad := range []string{"", "x", "-1", "1.5G", "99999999999T"} {
		_, err := parseByteSize(bad)
		require.Error(t, err, bad)
	}
}
