package main

import (
	"bytes"
	"errors"
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
