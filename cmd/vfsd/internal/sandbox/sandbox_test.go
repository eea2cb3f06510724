//go:build linux

package sandbox

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSandboxEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		extra    []string
		writable []string
		want     []string
	}{
		{"drops the daemon's variables", []string{"HOME=/root", "VFSD_TOKEN=x", "VFSD_ADDR=a", "VFSD_SOCKET=s", "VFSD_SESSION=old"}, nil, nil,
			[]string{"HOME=/root", "VFSD_SESSION=s1", "TMPDIR=/tmp"}},
		{"drops credentials and whatever is not allowed", []string{"AWS_SECRET_ACCESS_KEY=k", "AWS_ACCESS_KEY_ID=i", "GITHUB_TOKEN=t",
			"API_KEY=a", "HTTPS_PROXY=http://u:p@h", "SSH_AUTH_SOCK=/run/s", "FOO=bar", "PATH=/bin", "LANG=C.UTF-8", "LC_TIME=C", "TZ=UTC"}, nil, nil,
			[]string{"PATH=/bin", "LANG=C.UTF-8", "LC_TIME=C", "TZ=UTC", "VFSD_SESSION=s1", "TMPDIR=/tmp"}},
		{"--env passes and sets", []string{"FOO=bar", "PATH=/bin"}, []string{"FOO", "BAZ=qux", "PATH=/usr/bin", "MISSING", "EMPTY="}, nil,
			[]string{"PATH=/usr/bin", "FOO=bar", "BAZ=qux", "EMPTY=", "VFSD_SESSION=s1", "TMPDIR=/tmp"}},
		{"TMPDIR the sandbox hides goes to /tmp", []string{"TMPDIR=/tmp/foo"}, nil, nil, []string{"VFSD_SESSION=s1", "TMPDIR=/tmp"}},
		{"TMPDIR in a --rw path stays", []string{"TMPDIR=/scratch/t"}, nil, []string{"/scratch"}, []string{"VFSD_SESSION=s1", "TMPDIR=/scratch/t"}},
		{"--env TMPDIR in a --rw path", nil, []string{"TMPDIR=/scratch/u"}, []string{"/scratch"}, []string{"VFSD_SESSION=s1", "TMPDIR=/scratch/u"}},
		{"relative TMPDIR goes to /tmp", []string{"TMPDIR=t"}, nil, []string{"/"}, []string{"VFSD_SESSION=s1", "TMPDIR=/tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string // the caches have a test of their own (TestEnvCaches)
			for _, kv := range Env(tc.env, tc.extra, "s1", tc.writable) {
				if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") && !strings.HasPrefix(kv, "npm_config_cache=") {
					got = append(got, kv)
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseEnvFlags(t *testing.T) {
	require.NoError(t, ParseEnvFlags([]string{"FOO", "BAR=1", "_X=a=b", "EMPTY="}))
	for _, bad := range []string{"VFSD_TOKEN", "VFSD_SESSION=x", "", "=v", "1X", "A-B", "A B=c"} {
		require.Error(t, ParseEnvFlags([]string{bad}), bad)
	}
}

func TestSandboxHostView(t *testing.T) {
	s := Spec{WorkDir: "/home/u/proj", Writable: []string{"/tmp/out", "/home/u/proj/cache"}}
	for p, want := range map[string]bool{
		"/home/u/.local/state/vfsd": true,  // the host, read-only
		"/run/user/0/vfsd.sock":     true,  // the host
		"/tmp/vfsd123/d.sock":       false, // the private /tmp
		"/tmp/out/d.sock":           true,  // a --rw path inside /tmp shows the host
		"/home/u/proj/data":         false, // the session
		"/home/u/proj/cache/x":      true,  // a --rw path inside the session
		"/dev/log":                  false,
		"/proc/1":                   false,
		"/tmpx/a":                   true, // not /tmp
	} {
		require.Equal(t, want, s.hostView(p), p)
	}
}

func TestOutermost(t *testing.T) {
	require.Equal(t, []string{"/a/data", "/b.sock"}, outermost([]string{"/a/data", "/a/data/token", "/b.sock"}))
}

func TestRunStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		code int
		seen bool
	}{
		{`{ "child-pid": 7, "mnt-namespace": 1 }` + "\n" + `{ "exit-code": 3 }` + "\n", 3, true},
		{`{ "child-pid": 7 }` + "\n", 0, false}, // bwrap failed in setup
		{"", 0, false},
	} {
		code, seen := runStatus(strings.NewReader(tc.in))
		require.Equal(t, tc.code, code, tc.in)
		require.Equal(t, tc.seen, seen, tc.in)
	}
}

func TestSetMasks(t *testing.T) {
	dir := t.TempDir()
	data, proj, sock := dir+"/data", dir+"/proj", dir+"/s.sock"
	for _, d := range []string{data + "/inner", proj} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(sock, nil, 0o600))
	// A --rw path inside the data dir cannot be granted.
	s := Spec{WorkDir: proj, Writable: []string{data + "/inner"}}
	require.ErrorContains(t, s.SetMasks([]string{data}, nil, nil, nil), "keeps to itself")
	// A socket inside a --rw path is granted; the data dir is hidden; a
	// missing path is left alone. (dir is under /tmp, the private /tmp:
	// with dir itself writable, its contents show from the host.)
	s = Spec{WorkDir: proj, Writable: []string{dir}}
	require.NoError(t, s.SetMasks([]string{data, dir + "/missing"}, nil, []string{sock}, nil))
	require.Equal(t, []string{data}, s.masks)
	// Another session's mount is hidden as mountinfo names it; what lies
	// beneath any FUSE mount is never looked at (a hung FUSE server would
	// hang vfsd run): here a path that, if stat'ed, would exist.
	other := dir + "/other-session"
	s = Spec{WorkDir: proj, Writable: []string{dir}}
	require.NoError(t, s.SetMasks(nil, []string{other}, []string{sock}, []string{dir}))
	require.Equal(t, []string{other}, s.masks)
}

// TestEnvCaches: the usual caches point into the private /tmp where the
// host's are read-only, stay the host's under a --rw path, and yield to
// --env.
func TestEnvCaches(t *testing.T) {
	get := func(env []string, k string) string {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return "(unset)"
	}
	host := []string{"HOME=/home/u", "PATH=/usr/bin", "TMPDIR=/home/u/tmp"}
	for _, tc := range []struct {
		name             string
		extra, writable  []string
		wantCache, wantN string
	}{
		{"read-only host", nil, nil, "/tmp/.cache", "/tmp/.npm"},
		{"--rw ~/.cache", nil, []string{"/home/u/.cache"}, "/home/u/.cache", "/tmp/.npm"},
		{"--rw HOME", nil, []string{"/home/u"}, "/home/u/.cache", "/home/u/.npm"},
		{"--env", []string{"XDG_CACHE_HOME=/somewhere"}, nil, "/somewhere", "/tmp/.npm"},
		{"--rw TMPDIR", nil, []string{"/home/u/tmp"}, "/home/u/tmp/.cache", "/home/u/tmp/.npm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env(host, tc.extra, "s1", tc.writable)
			require.Equal(t, tc.wantCache, get(env, "XDG_CACHE_HOME"))
			require.Equal(t, tc.wantN, get(env, "npm_config_cache"))
		})
	}
}
