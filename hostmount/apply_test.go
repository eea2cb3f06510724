package hostmount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

func TestApplyBackToHost(t *testing.T) {
	e := newEnv(t)
	e.write("proj/keep.txt", "keep\n")
	e.write("proj/edit.txt", "old\n")
	e.write("proj/gone.txt", "bye\n")
	e.write("proj/olddir/x.txt", "x\n")
	e.write("proj/conflict.txt", "base\n")
	e.write("proj/dir/nested.txt", "n\n")
	mounts := []Mount{{HostPath: filepath.Join(e.root, "proj"), MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	base := rep.Snapshot

	w := func(p, content string) {
		_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{CreateParents: true})
		require.NoError(t, err)
	}
	w("edit.txt", "new\n")
	w("added/deep/file.txt", "added\n")
	w("conflict.txt", "session\n")
	w("created-on-host.txt", "session\n")
	require.NoError(t, s.Remove(ctx, vfs.MustPath("gone.txt"), vfs.RemoveOptions{}))
	require.NoError(t, s.Remove(ctx, vfs.MustPath("olddir"), vfs.RemoveOptions{Recursive: true}))
	links := canSymlink(t)
	if links {
		_, err = s.Symlink(ctx, "keep.txt", vfs.MustPath("link"))
		require.NoError(t, err)
	}
	w("dir/nested.txt", "through a swapped dir\n")

	// Meanwhile the host changes: one file edited, one created where the
	// session creates one, and a directory swapped for a symlink to a
	// place outside the root (for a file, where symlinks cannot be made).
	e.write("proj/conflict.txt", "host edit\n")
	e.write("proj/created-on-host.txt", "host\n")
	require.NoError(t, os.RemoveAll(filepath.Join(e.root, "proj/dir")))
	if links {
		require.NoError(t, os.Symlink(e.outside, filepath.Join(e.root, "proj/dir")))
	} else {
		e.write("proj/dir", "a file now\n")
	}

	hostState := func() map[string]string {
		out := map[string]string{}
		_ = filepath.Walk(filepath.Join(e.root, "proj"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(filepath.Join(e.root, "proj"), p)
				out[filepath.ToSlash(rel)] = string(b)
			}
			return nil
		})
		return out
	}
	before := hostState()
	dry, err := e.im.Apply(ctx, e.repo, base, s, mounts, ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, before, hostState(), "a dry run writes nothing")

	got, err := e.im.Apply(ctx, e.repo, base, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, dry.Applied, got.Applied, "the dry run predicts the real run")
	conflicts := map[string]string{}
	for _, c := range got.Conflicts {
		conflicts[c.Path] = c.Conflict
	}
	require.Contains(t, conflicts["/conflict.txt"], "modified on the host")
	require.Contains(t, conflicts["/created-on-host.txt"], "created on the host")
	require.Contains(t, conflicts["/dir/nested.txt"], "parent directory")

	after := hostState()
	require.Equal(t, "new\n", after["edit.txt"])
	require.Equal(t, "added\n", after["added/deep/file.txt"])
	require.Equal(t, "host edit\n", after["conflict.txt"], "a conflict leaves the host's version")
	require.Equal(t, "host\n", after["created-on-host.txt"])
	require.Equal(t, "keep\n", after["keep.txt"])
	require.NotContains(t, after, "gone.txt")
	require.NotContains(t, after, "olddir/x.txt")
	_, err = os.Stat(filepath.Join(e.root, "proj/olddir"))
	require.ErrorIs(t, err, os.ErrNotExist)
	if links {
		target, err := os.Readlink(filepath.Join(e.root, "proj/link"))
		require.NoError(t, err)
		require.Equal(t, "keep.txt", target)
	}
	secret, err := os.ReadFile(filepath.Join(e.outside, "secret"))
	require.NoError(t, err)
	require.Equal(t, "TOP SECRET", string(secret), "nothing was written through the planted symlink")
	_, err = os.Stat(filepath.Join(e.outside, "nested.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	leftovers, _ := filepath.Glob(filepath.Join(e.root, "proj", ".*.vfsd-*"))
	require.Empty(t, leftovers)
}

// TestApplyRacingHost changes each host file at the worst moment — after
// apply checked it, before apply moves it — and requires the host's change
// to survive and be reported as a conflict.
func TestApplyRacingHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w func(p, content string), rm func(p string))
		race  func(hostPath string)
		want  map[string]string // the host afterwards; "" for absent
	}{
		{
			name:  "modified file edited in place",
			setup: func(w func(p, c string), _ func(string)) { w("f.txt", "session\n") },
			race:  func(hp string) { require.NoError(t, os.WriteFile(hp, []byte("host\n"), 0o644)) },
			want:  map[string]string{"f.txt": "host\n"},
		},
		{
			name:  "modified file removed",
			setup: func(w func(p, c string), _ func(string)) { w("f.txt", "session\n") },
			race:  func(hp string) { require.NoError(t, os.Remove(hp)) },
			want:  map[string]string{"f.txt": ""},
		},
		{
			name:  "added file created on the host",
			setup: func(w func(p, c string), _ func(string)) { w("new.txt", "session\n") },
			race:  func(hp string) { require.NoError(t, os.WriteFile(hp, []byte("host\n"), 0o644)) },
			want:  map[string]string{"new.txt": "host\n"},
		},
		{
			name:  "deleted file edited on the host",
			setup: func(_ func(p, c string), rm func(string)) { rm("f.txt") },
			race:  func(hp string) { require.NoError(t, os.WriteFile(hp, []byte("host\n"), 0o644)) },
			want:  map[string]string{"f.txt": "host\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("proj/f.txt", "base\n")
			mounts := []Mount{{HostPath: filepath.Join(e.root, "proj"), MountPath: "/"}}
			s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
			require.NoError(t, err)
			tc.setup(func(p, content string) {
				_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{})
				require.NoError(t, err)
			}, func(p string) {
				require.NoError(t, s.Remove(ctx, vfs.MustPath(p), vfs.RemoveOptions{}))
			})
			raced := 0
			testHookBeforeMove = func(name string) {
				raced++
				tc.race(filepath.Join(e.root, "proj", name))
			}
			defer func() { testHookBeforeMove = nil }()

			got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, raced, "%+v", got.Conflicts)
			require.Empty(t, got.Applied)
			require.Len(t, got.Conflicts, 1)
			require.Contains(t, got.Conflicts[0].Conflict, "while being applied")
			for p, want := range tc.want {
				b, err := os.ReadFile(filepath.Join(e.root, "proj", p))
				if want == "" {
					require.ErrorIs(t, err, os.ErrNotExist)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, want, string(b))
			}
			leftovers, _ := filepath.Glob(filepath.Join(e.root, "proj", ".*.vfsd-*"))
			require.Empty(t, leftovers)
		})
	}
}

// A host file changed to the very content the session has is no conflict:
// the apply reports it applied (the host already has it), writes nothing,
// and the next apply has nothing left to do.
func TestApplyHostAlreadyHasTheSessionsContent(t *testing.T) {
	e := newEnv(t)
	e.write("proj/same.txt", "base\n")
	e.write("proj/differs.txt", "base\n")
	mounts := []Mount{{HostPath: filepath.Join(e.root, "proj"), MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	for p, content := range map[string]string{"same.txt": "agreed\n", "differs.txt": "session\n", "new.txt": "both\n"} {
		_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{})
		require.NoError(t, err)
	}
	e.write("proj/same.txt", "agreed\n")
	e.write("proj/differs.txt", "host\n")
	e.write("proj/new.txt", "both\n")
	require.NoError(t, os.Chmod(filepath.Join(e.root, "proj/new.txt"), 0o644))
	st, err := s.Stat(ctx, vfs.MustPath("new.txt"))
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(e.root, "proj/new.txt"), st.Mode.Perm()))

	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	applied := map[string]string{}
	for _, c := range got.Applied {
		applied[c.Path] = c.Note
	}
	require.Equal(t, "the host already has it", applied["/same.txt"])
	require.Equal(t, "the host already has it", applied["/new.txt"])
	require.Len(t, got.Conflicts, 1)
	require.Equal(t, "/differs.txt", got.Conflicts[0].Path)
	require.Contains(t, got.Conflicts[0].Conflict, "vfsd session rebase", "the conflict points to rebase, not reset")
	b, err := os.ReadFile(filepath.Join(e.root, "proj/differs.txt"))
	require.NoError(t, err)
	require.Equal(t, "host\n", string(b))
}
