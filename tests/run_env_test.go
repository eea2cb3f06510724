//go:build linux

package tests

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunSandboxEnvCarriesNoCredentials: the sandboxed command's
// environment carries none of vfsd's credentials — AWS_* (the daemon's
// bucket), tokens, secrets, keys, passwords, proxies with a password in
// them — only the allowed variables (the path, home, user, terminal,
// locale and time zone) and what --env passes explicitly; --env cannot
// pass a VFSD_* variable.
func TestRunSandboxEnvCarriesNoCredentials(t *testing.T) {
	f := newSandboxFixture(t)
	secrets := []string{
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIsecret", "AWS_ACCESS_KEY_ID=AKIAEXAMPLE", "AWS_SESSION_TOKEN=tok",
		"GITHUB_TOKEN=ghp_secret", "OPENAI_API_KEY=sk-secret", "MY_SERVICE_PASSWORD=hunter2", "DB_SECRET=s3",
		"HTTPS_PROXY=http://user:pass@proxy:3128", "VFSD_TOKEN=admin-token", "UNLISTED=x",
	}
	safe := []string{"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=Europe/Paris", "TERM=xterm-256color", "HOME=/root"}
	for _, sandbox := range []string{"bwrap", "namespace"} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == "bwrap" {
				if _, err := exec.LookPath("bwrap"); err != nil {
					t.Skip("bubblewrap is not installed (.ci/run installs it)")
				}
			}
			env := append(append([]string{"PASSED=from-vfsd"}, secrets...), safe...)
			stdout, stderr, code := f.run(t, runOpts{env: env}, "--sandbox", sandbox, "--dir", f.project,
				"--env", "PASSED", "--env", "SET=by-flag", "--env", "NOT_SET_ANYWHERE", "--", "env")
			require.Equal(t, 0, code, stderr)
			got := map[string]string{}
			for _, l := range strings.Split(stdout, "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					got[k] = v
				}
			}
			for _, kv := range secrets {
				k, _, _ := strings.Cut(kv, "=")
				require.NotContains(t, got, k, "the sandbox was given %s:\n%s", k, stdout)
			}
			for _, kv := range safe {
				k, v, _ := strings.Cut(kv, "=")
				require.Equal(t, v, got[k], "%s is not passed on:\n%s", k, stdout)
			}
			require.NotEmpty(t, got["PATH"])
			require.NotEmpty(t, got["VFSD_SESSION"])
			require.Equal(t, "from-vfsd", got["PASSED"], "--env NAME passes NAME's value")
			require.Equal(t, "by-flag", got["SET"], "--env NAME=VALUE sets it")
			require.NotContains(t, got, "NOT_SET_ANYWHERE")
		})
	}
	// --env cannot hand the command a way to the daemon.
	_, stderr, code := f.run(t, runOpts{env: []string{"VFSD_TOKEN=admin-token"}}, "--dir", f.project, "--env", "VFSD_TOKEN", "--", "true")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "VFSD_")
}
