package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestEveryVerbHasExamples walks the command tree: every verb a person
// can run shows examples in its --help.
func TestEveryVerbHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			require.NotEmpty(t, sub.Example, "%s --help shows no examples", sub.CommandPath())
			walk(sub)
		}
	}
	walk(newRoot())
}

// TestUsageErrorsNameRealCommands checks that every wrong command line is
// a usage error (exit 2) whose hint names a command that exists.
func TestUsageErrorsNameRealCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"nonsense"}, "see 'vfsd --help'"},
		{[]string{"sesion"}, "did you mean session"},
		{[]string{"--bogus"}, "see 'vfsd --help'"},
		{[]string{"session", "create", "--bogus"}, "see 'vfsd session create --help'"},
		{[]string{"session", "create", "extra"}, "see 'vfsd session create --help'"},
		{[]string{"snapshot", "rm"}, "see 'vfsd snapshot rm --help'"},
		{[]string{"session", "close"}, "see 'vfsd session close --help'"},
		{[]string{"mount", "only-one"}, "see 'vfsd mount --help'"},
		{[]string{"diff", "a", "b", "--from", "base"}, "see 'vfsd diff --help'"},
		{[]string{"version", "extra"}, "see 'vfsd version --help'"},
		{[]string{"tool", "--dir", t.TempDir(), "read_file", "--params", "{}", "--json", "{}"}, "--params"},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		var ue usageError
		require.True(t, errors.As(err, &ue), "%v: want a usage error, got %v", tc.args, err)
		require.Contains(t, err.Error(), tc.hint, tc.args)
		require.NotContains(t, err.Error(), "vfsd vfsd", tc.args)
	}
}

func TestVersion(t *testing.T) {
	root := newRoot()
	root.SetArgs([]string{"--version"})
	var out bytes.Buffer
	root.SetOut(&out)
	require.NoError(t, root.Execute())
	require.Equal(t, "vfsd "+version()+"\n", out.String())
}

func TestDeprecatedFlagWarns(t *testing.T) {
	dir := t.TempDir()
	root := newRoot()
	root.SetArgs([]string{"tool", "--dir", dir, "list_directory", "--json", `{"path":"."}`})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	require.NoError(t, root.Execute())
	require.Contains(t, out.String(), `"status":"ok"`, "the old name still works")
	require.Contains(t, errOut.String(), "vfsd tool --json is deprecated and will go: use --params")
	// The old names are hidden from --help.
	root = newRoot()
	root.SetArgs([]string{"session", "create", "--help"})
	out.Reset()
	root.SetOut(&out)
	require.NoError(t, root.Execute())
	require.Contains(t, out.String(), "--folder")
	require.NotContains(t, out.String(), "--mount stringArray")
}

func TestArgKinds(t *testing.T) {
	for use, want := range map[string][]string{
		"show SESSION":                                  {"SESSION"},
		"rm SNAPSHOT... [--session SESSION]":            {"SNAPSHOT..."},
		"mount SESSION DIR [--backend fuse] | mount":    {"SESSION", "DIR"},
		"restore SESSION SNAPSHOT":                      {"SESSION", "SNAPSHOT"},
		"list [-q]":                                     nil,
		"fork (SNAPSHOT | --session SESSION) [--id ID]": nil,
		"mcp --session ID":                              nil,
	} {
		require.Equal(t, want, argKinds(use), use)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/src":     "/home/me/src",
		"/home/me/my src":  "'/home/me/my src'",
		"/tmp/it's":        `'/tmp/it'\''s'`,
		"/tmp/$(rm -rf ~)": "'/tmp/$(rm -rf ~)'",
		"":                 "''",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
	require.Equal(t, "vfsd serve --allow-root '/a b' --allow-root /c", serveHint(defaultDataDir(), []string{"/a b", "/c"}))
	require.True(t, strings.HasPrefix(serveHint("/x y", nil), "vfsd serve --data-dir '/x y'"))
}

func TestCoveredBy(t *testing.T) {
	require.True(t, coveredBy("/a/b", []string{"/a"}))
	require.True(t, coveredBy("/a", []string{"/a"}))
	require.False(t, coveredBy("/ab", []string{"/a"}))
	require.False(t, coveredBy("/a", []string{"/a/b"}))
}
