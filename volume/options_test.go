package volume

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]string
		want Options
	}{
		{"none", nil, Options{TTL: "never"}},
		{"folder and globs", map[string]string{"folder": "/src/app/", "include": "**/*.go, cmd/**", "exclude": "vendor/**"},
			Options{TTL: "never", Folder: "/src/app", Include: []string{"**/*.go", "cmd/**"}, Exclude: []string{"vendor/**"}}},
		{"braces keep their commas", map[string]string{"folder": "/s", "include": "**/*.{go,mod},README*"},
			Options{TTL: "never", Folder: "/s", Include: []string{"**/*.{go,mod}", "README*"}}},
		{"flags alone are true", map[string]string{"folder": "/s", "readonly": "", "gitignore": "", "default-excludes": "yes"},
			Options{TTL: "never", Folder: "/s", ReadOnly: true, Gitignore: true, DefaultExcludes: true}},
		{"readonly false", map[string]string{"readonly": "false"}, Options{TTL: "never"}},
		{"fork", map[string]string{"fork": "3f2a9c"}, Options{TTL: "never", Fork: "3f2a9c"}},
		{"backend uid gid", map[string]string{"backend": "fuse", "uid": "1000", "gid": "100"},
			Options{TTL: "never", Backend: "fuse", UID: 1000, GID: 100}},
		{"policy preset", map[string]string{"policy": "x07"}, Options{TTL: "never", Policy: "x07"}},
		{"policy object", map[string]string{"policy": `{"base":"default"}`}, Options{TTL: "never", PolicyObject: []byte(`{"base":"default"}`)}},
		{"quotas", map[string]string{"quota": "2GiB", "quota-files": "5000"}, Options{TTL: "never", QuotaBytes: 2 << 30, QuotaFiles: 5000}},
		{"ttl", map[string]string{"ttl": "24h"}, Options{TTL: "24h"}},
		{"ttl never", map[string]string{"ttl": "0"}, Options{TTL: "never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.opts)
			require.NoError(t, err)
			require.Equal(t, tc.want, *o)
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   map[string]string
		option string // the option the error names
		says   string // and what it says
	}{
		{"unknown", map[string]string{"inclde": "*.go"}, "inclde", "they take folder, include, exclude"},
		{"relative folder", map[string]string{"folder": "src"}, "folder", "an absolute host directory"},
		{"dotdot folder", map[string]string{"folder": "/src/../etc"}, "folder", `must not contain ".."`},
		{"absolute glob", map[string]string{"folder": "/s", "include": "/etc/**"}, "include", "relative to the folder"},
		{"bad glob", map[string]string{"folder": "/s", "exclude": "a/{b"}, "exclude", "not a valid glob"},
		{"empty glob", map[string]string{"folder": "/s", "include": "a,,b"}, "include", "an empty glob"},
		{"globs without folder", map[string]string{"include": "*.go"}, "include", "give -o folder=DIR too"},
		{"folder and fork", map[string]string{"folder": "/s", "fork": "ws1"}, "fork", "not both"},
		{"empty fork", map[string]string{"fork": " "}, "fork", "a session's ID"},
		{"backend", map[string]string{"backend": "zfs"}, "backend", "fuse (the default), overlay or auto"},
		{"readonly", map[string]string{"readonly": "maybe"}, "readonly", "true or false"},
		{"policy preset", map[string]string{"policy": "lax"}, "policy", "a policy preset (aos, default"},
		{"policy json", map[string]string{"policy": "{not json"}, "policy", "not a JSON object"},
		{"quota", map[string]string{"quota": "12XB"}, "quota", "a number with an optional K, M, G or T"},
		{"quota zero", map[string]string{"quota": "0"}, "quota", "the most bytes"},
		{"quota files", map[string]string{"quota-files": "-1"}, "quota-files", "a positive number"},
		{"uid", map[string]string{"uid": "root"}, "uid", "a numeric user ID"},
		{"gid too big", map[string]string{"gid": "4294967296"}, "gid", "a numeric group ID"},
		{"uid with overlay", map[string]string{"backend": "overlay", "uid": "1000"}, "uid", "maps no uid/gid"},
		{"ttl", map[string]string{"ttl": "soon"}, "ttl", `like 24h, or "never"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.opts)
			var oe *OptionError
			require.True(t, errors.As(err, &oe), "%v", err)
			require.Equal(t, tc.option, oe.Option)
			require.Contains(t, err.Error(), "option "+tc.option+"=")
			require.Contains(t, err.Error(), tc.says)
		})
	}
}

func TestRequests(t *testing.T) {
	o, err := Parse(map[string]string{"folder": "/src", "include": "**/*.go", "quota": "1M", "policy": "x07"})
	require.NoError(t, err)
	req := o.SessionRequest("ws1")
	require.Equal(t, api.CreateSessionRequest{ID: "ws1", Policy: "x07", TTL: "never",
		Mounts: []api.Mount{{HostPath: "/src", MountPath: "/", Include: []string{"**/*.go"}}},
		Quota:  &api.Quota{MaxBytes: 1 << 20}}, req)
	mr := o.MountRequest("/m")
	require.Equal(t, api.MountRequest{Dir: "/m", AllowOther: true}, mr, "FUSE lets containers of any uid in, under the kernel's checks")
	require.False(t, mr.AllowSetID || mr.AllowDevices, "volumes are nosuid,nodev")

	o, err = Parse(map[string]string{"backend": "overlay", "readonly": ""})
	require.NoError(t, err)
	require.Equal(t, api.MountRequest{Dir: "/m", Backend: "overlay", ReadOnly: true}, o.MountRequest("/m"))
}

func TestHelpListsEveryOption(t *testing.T) {
	h := Help()
	for _, k := range Keys() {
		require.True(t, strings.Contains(h, k+": "), k)
	}
}

func TestCheckName(t *testing.T) {
	require.NoError(t, CheckName("ws1"))
	for _, bad := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("a", 65)} {
		require.Error(t, CheckName(bad), bad)
	}
}
