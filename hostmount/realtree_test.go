//go:build linux

package hostmount

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestImportGoSourceTree imports the Go distribution's src with include and
// exclude patterns and compares the result, file by file and byte by byte,
// with find(1)'s selection of the same tree.
func TestImportGoSourceTree(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole Go source tree")
	}
	goroot := runtime.GOROOT()
	src := filepath.Join(goroot, "src")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no Go source tree at %s", src)
	}
	if _, err := exec.LookPath("find"); err != nil {
		t.Skip("find(1) is not installed")
	}
	e := newEnv(t, func(o *Options) { o.Roots = []string{goroot} })
	snap, rep, err := e.im.Import(ctx, e.repo, []Mount{{
		HostPath:  src,
		MountPath: "/",
		Include:   []string{"**/*.go", "**/*.s"},
		Exclude:   []string{"**/testdata", "cmd/**"},
	}}, nil)
	require.NoError(t, err)

	cmd := exec.Command("find", ".", "(", "-name", "testdata", "-o", "-path", "./cmd", ")", "-prune", "-o",
		"-type", "f", "(", "-name", "*.go", "-o", "-name", "*.s", ")", "-print")
	cmd.Dir = src
	out, err := cmd.Output()
	require.NoError(t, err)
	want := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		want[strings.TrimPrefix(sc.Text(), "./")] = true
	}
	require.Greater(t, len(want), 1000)

	got := map[string]bool{}
	_ = snap.Tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
		if n.IsFile() {
			got[string(p)] = true
			data, err := os.ReadFile(filepath.Join(src, string(p)))
			require.NoError(t, err)
			require.Equal(t, vfs.HashOf(data), n.Blob, "%s differs from the host file", p)
		}
		return nil
	})
	require.Equal(t, want, got)
	require.Equal(t, int64(len(want)), rep.Files)
	require.Empty(t, rep.Skipped)
}
