//go:build linux

package hostmount

// Import tests that need Linux's file names or system calls; they run with
// either host access layer (openat2, or os.Root under -tags vfsd_osroot).

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestImportNames: any byte but / and NUL makes a Linux name; the session
// takes valid UTF-8.
func TestImportNames(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *env)
		mounts func(e *env) []Mount
		want   map[string]string
		skips  map[string]string // host path relative to root → reason
	}{
		{
			name: "names with newlines are imported, invalid UTF-8 is skipped",
			setup: func(e *env) {
				e.write("p/line\nbreak", "n")
				e.write("p/bad\xffname", "b")
			},
			mounts: func(e *env) []Mount { return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/"}} },
			want:   map[string]string{"": "dir", "line\nbreak": "n"},
			skips:  map[string]string{"p/bad\xffname": SkipNotUTF8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			got, rep := e.load(tt.mounts(e)...)
			require.Equal(t, tt.want, got)
			wantSkips := map[string]string{}
			for rel, reason := range tt.skips {
				wantSkips[filepath.Join(e.root, rel)] = reason
			}
			require.Equal(t, wantSkips, skipsOf(rep))
		})
	}
}

// TestDeepTrees imports a tree deeper than any absolute host path could
// name: the walk goes by directory descriptors. Entries too deep for a
// session path are skipped and reported.
func TestDeepTrees(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("d", 200)
	fd, err := syscall.Open(e.root, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Mkdirat(fd, "deep", 0o755))
	cur, err := syscall.Openat(fd, "deep", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	require.NoError(t, err)
	syscall.Close(fd)
	for range 30 { // 30 × 201 bytes: past both PATH_MAX and the session's limit
		require.NoError(t, syscall.Mkdirat(cur, name, 0o755))
		f, err := syscall.Openat(cur, "f", syscall.O_CREAT|syscall.O_WRONLY, 0o644)
		require.NoError(t, err)
		syscall.Write(f, []byte("x"))
		syscall.Close(f)
		next, err := syscall.Openat(cur, name, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		require.NoError(t, err)
		syscall.Close(cur)
		cur = next
	}
	syscall.Close(cur)
	snap, rep, err := e.im.Import(ctx, e.repo, []Mount{{HostPath: e.root + "/deep", MountPath: "/"}}, nil)
	require.NoError(t, err)
	maxDepth := 0
	_ = snap.Tree.Walk(vfs.Root, func(p vfs.Path, _ vfs.Node) error {
		require.LessOrEqual(t, len(p), vfs.MaxPathBytes)
		maxDepth = max(maxDepth, p.Depth())
		return nil
	})
	require.Equal(t, 21, maxDepth, "20 directories of 201 bytes and a file fit in 4095")
	require.NotEmpty(t, rep.Skipped)
	for _, s := range rep.Skipped {
		require.Equal(t, SkipBadName, s.Reason)
	}
}
