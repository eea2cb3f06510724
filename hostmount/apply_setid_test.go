//go:build linux && !vfsd_osroot

package hostmount

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// TestApplyWritesNoNewPrivileges: what uid 0 in a vfsd run command (no
// capabilities) can make in its session — a set-user-ID-root copy of a
// program, set-ID bits on a file imported without them, new content under
// a set-ID bit the host had — and a file capability (made through another
// mount), applied as root, would be a root program on the host for anyone
// who can reach the folder. Apply writes none of it unless asked
// (ApplyOptions.KeepSetID): the files land without set-ID bits and without
// security.capability, each noted; a set-group-ID directory stays (it only
// passes its group on); the import base records what was written, so the
// next apply lists the set-ID changes again (noted) and KeepSetID writes
// them without a conflict.
func TestApplyWritesNoNewPrivileges(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dir := posixHost(t, e, "p")
	mounts := []Mount{{HostPath: dir, MountPath: "/"}}
	s, rep, err := e.im.Stage(ctx, e.repo, snapshot.SessionOptions{}, mounts, nil)
	require.NoError(t, err)
	must := func(_ vfs.Node, err error) { t.Helper(); require.NoError(t, err) }
	write := func(p, content string) {
		t.Helper()
		_, err := s.WriteFile(ctx, vfs.MustPath(p), strings.NewReader(content), vfs.WriteOptions{})
		require.NoError(t, err)
	}
	write("rootshell", "#!/bin/sh\nexec sh\n")
	must(s.Chown(ctx, "rootshell", 0, 0))
	must(s.Chmod(ctx, "rootshell", 0o755|fs.ModeSetuid|fs.ModeSetgid))
	write("capped", "a program")
	capability := make([]byte, 20) // vfs_cap_data v2: CAP_DAC_READ_SEARCH, effective
	binary.LittleEndian.PutUint32(capability[0:], 0x02000001)
	binary.LittleEndian.PutUint32(capability[4:], 1<<2)
	must(s.SetXattr(ctx, "capped", "security.capability", capability, 0))
	must(s.Chmod(ctx, "root-owned", 0o755|fs.ModeSetuid)) // imported 0644, content unchanged
	write("suid", "new content")                          // imported 04755: the session's content
	must(s.Chmod(ctx, "suid", 0o755|fs.ModeSetuid))
	must(s.Mkdir(ctx, "group", vfs.MkdirOptions{Perm: 0o775 | fs.ModeSetgid, ExactPerm: true}))

	got, err := e.im.Apply(ctx, e.repo, rep.Snapshot, s, mounts, ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, got.Conflicts)
	notes := map[string]string{}
	for _, c := range got.Applied {
		notes[c.Path] = c.Note
	}
	host := hostStates(t, dir)
	for _, p := range []string{"rootshell", "root-owned", "suid", "capped"} {
		require.Zero(t, host[p].mode&0o6000, "%s was applied with set-ID bits: %o", p, host[p].mode)
		require.NotContains(t, host[p].xattrs, "security.capability", "%s was applied with a file capability", p)
		require.Contains(t, notes["/"+p], "not applied", p)
	}
	require.EqualValues(t, 0o755, host["rootshell"].mode&0o7777)
	b, err := os.ReadFile(filepath.Join(dir, "suid"))
	require.NoError(t, err)
	require.Equal(t, "new content", string(b))
	require.EqualValues(t, 0o2775, host["group"].mode&0o7777, "a set-group-ID directory is applied as it is")

	// The session still has them: the next apply lists them again.
	again, err := e.im.Apply(ctx, e.repo, got.Import, s, mounts, ApplyOptions{DryRun: true})
	require.NoError(t, err)
	require.Empty(t, again.Conflicts)
	require.Len(t, again.Applied, 4, "%+v", again.Applied)
	for _, c := range again.Applied {
		if c.Path != "/capped" { // a dry run sees modes, not attributes
			require.Contains(t, c.Note, "set-ID bits not applied", c.Path)
		}
	}

	// Asked, they are written, without a conflict.
	kept, err := e.im.Apply(ctx, e.repo, got.Import, s, mounts, ApplyOptions{KeepSetID: true})
	require.NoError(t, err)
	require.Empty(t, kept.Conflicts)
	host = hostStates(t, dir)
	require.EqualValues(t, 0o6755, host["rootshell"].mode&0o7777)
	require.EqualValues(t, 0o4755, host["root-owned"].mode&0o7777)
	require.EqualValues(t, 0o4755, host["suid"].mode&0o7777)
	require.Equal(t, string(capability), host["capped"].xattrs["security.capability"])
}
