package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestParseRewindTarget(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	u := func(n uint64) *uint64 { return &n }
	ts := func(t time.Time) *time.Time { return &t }
	for _, tc := range []struct {
		in   string
		want api.RewindRequest
		err  bool
	}{
		{in: "4", want: api.RewindRequest{Call: 4}},
		{in: "call:12", want: api.RewindRequest{Call: 12}},
		{in: "#3", want: api.RewindRequest{Call: 3}},
		{in: "@17", want: api.RewindRequest{Seq: u(17)}},
		{in: "@0", want: api.RewindRequest{Seq: u(0)}},
		{in: "seq:5", want: api.RewindRequest{Seq: u(5)}},
		{in: "2026-03-04T05:00:00Z", want: api.RewindRequest{Time: ts(time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC))}},
		{in: "10m", want: api.RewindRequest{Time: ts(now.Add(-10 * time.Minute))}},
		{in: "9c1e0b", want: api.RewindRequest{Snapshot: "9c1e0b"}},
		{in: "", err: true},
		{in: "0", err: true},
		{in: "@x", err: true},
	} {
		got, err := parseRewindTarget(tc.in, now)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}
