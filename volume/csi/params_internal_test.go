package csi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		set  paramSet
		want params
		err  string
	}{
		{name: "empty", in: nil, want: params{Backend: "auto"}},
		{name: "k8s keys pass", in: map[string]string{"csi.storage.k8s.io/pvc/name": "c"}, want: params{Backend: "auto"}},
		{name: "one folder at the root", in: map[string]string{"folders": "/src/app", "exclude": "vendor/**,*.{tmp,log}"},
			want: params{Backend: "auto", Folders: []api.Mount{{HostPath: "/src/app", MountPath: "/", Exclude: []string{"vendor/**", "*.{tmp,log}"}}}}},
		{name: "two folders, newlines", in: map[string]string{"folders": "/src/a=/a\n/src/b/=/b\n", "gitignore": "true", "backend": "fuse"},
			want: params{Backend: "fuse", Folders: []api.Mount{{HostPath: "/src/a", MountPath: "/a", Gitignore: true}, {HostPath: "/src/b", MountPath: "/b", Gitignore: true}}}},
		{name: "policy and files", in: map[string]string{"policy": "x07", "maxFiles": "100"}, want: params{Backend: "auto", Policy: "x07", MaxFiles: 100}},
		{name: "inline snapshot", set: forInline, in: map[string]string{"snapshot": strings.Repeat("ab", 32), "maxBytes": "1024"},
			want: params{Backend: "auto", Snapshot: strings.Repeat("ab", 32), MaxBytes: 1024}},
		{name: "snapshot in a class", in: map[string]string{"snapshot": strings.Repeat("ab", 32)}, err: `unknown parameter "snapshot"`},
		{name: "prefix", set: forInline, in: map[string]string{"snapshot": "abab"}, err: "full ID"},
		{name: "folders and snapshot", set: forInline, in: map[string]string{"snapshot": strings.Repeat("ab", 32), "folders": "/a"}, err: "not both"},
		{name: "bad bool", in: map[string]string{"folders": "/a", "gitignore": "yes please"}, err: "use true or false"},
		{name: "bad number", in: map[string]string{"maxFiles": "-1"}, err: "positive whole number"},
		{name: "relative", in: map[string]string{"folders": "a/b"}, err: "not an absolute host path"},
		{name: "unknown", in: map[string]string{"readonly": "true"}, err: `unknown parameter "readonly"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseParams(tc.in, tc.set, "auto")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSessionID(t *testing.T) {
	require.Equal(t, "pvc-0b6c5e4e-1f7b-4b8e-9a41-1c8f6f3a2d10", sessionID("pvc-0b6c5e4e-1f7b-4b8e-9a41-1c8f6f3a2d10"))
	long := "csi-" + strings.Repeat("f", 64)
	require.Equal(t, sessionID(long), sessionID(long), "stable")
	require.True(t, strings.HasPrefix(sessionID(long), "v-"))
	require.NotEqual(t, "v-x", sessionID("v-x"), "v- names are the digests' own")
	require.NotEqual(t, sessionID("a b"), sessionID("a_b"))
}
