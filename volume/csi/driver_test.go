//go:build linux

package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/volume/csi"
)

// mountAt returns the mount at dir, if any.
func mountAt(t *testing.T, dir string) *mountinfo.Mount {
	t.Helper()
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	for i := range ms {
		if ms[i].MountPoint == dir {
			return &ms[i]
		}
	}
	return nil
}

// metaLayers counts the overlay metadata layers the daemon has built.
func metaLayers(t *testing.T, e *env) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.dataDir, "overlay", "meta"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	n := 0
	for _, d := range ents {
		if d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
	}
	return n
}

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
}

// TestStagedVolumeLifecycle: a StorageClass's folders and globs stage a
// volume; it publishes with each backend, nosuid and nodev; what a
// program writes in the mount is the session's; a snapshot forks into a
// new volume and a clone copies a live one, both O(1); a published volume
// cannot be deleted; unpublish leaves nothing mounted.
func TestStagedVolumeLifecycle(t *testing.T) {
	for _, backend := range []string{api.BackendFUSE, api.BackendOverlay} {
		t.Run(backend, func(t *testing.T) {
			if backend == api.BackendOverlay {
				requireOverlay(t)
			}
			e := newEnv(t, envOpts{})
			src := filepath.Join(e.allow, "app")
			writeTree(t, src, map[string]string{"main.go": "package main\n", "vendor/x/x.go": "package x\n", "README.md": "hi\n"})
			vol := e.create("pvc-1", map[string]string{csi.ParamFolders: src, csi.ParamExclude: "vendor/**",
				csi.ParamBackend: backend, "csi.storage.k8s.io/pvc/name": "claim"})
			require.Equal(t, "pvc-1", vol.GetVolumeId())
			require.Equal(t, map[string]string{csi.TopologyKey: "node-1"}, vol.GetAccessibleTopology()[0].GetSegments())
			s, err := e.session("pvc-1")
			require.NoError(t, err)
			require.EqualValues(t, 2, s.Files, "main.go and README.md; vendor excluded")

			// The same request again is the same volume; another is not.
			again := e.create("pvc-1", map[string]string{csi.ParamFolders: src, csi.ParamExclude: "vendor/**", csi.ParamBackend: backend})
			require.Equal(t, vol.GetVolumeId(), again.GetVolumeId())
			_, err = e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "pvc-1", Parameters: map[string]string{csi.ParamFolders: src},
				VolumeCapabilities: []*csipb.VolumeCapability{mountCap()}})
			requireCode(t, codes.AlreadyExists, err)

			if backend == api.BackendOverlay {
				require.Equal(t, 1, metaLayers(t, e), "CreateVolume built the overlay metadata layer")
			}
			target := e.target("pod-a", "pvc-1")
			require.NoError(t, e.publish("pvc-1", target, nil))
			if backend == api.BackendOverlay {
				require.Equal(t, 1, metaLayers(t, e), "the publish found it built: the same state's layer")
			}
			require.NoError(t, e.publish("pvc-1", target, nil), "publish is idempotent")
			m := mountAt(t, target)
			require.NotNil(t, m, "mounted at the target")
			require.Contains(t, strings.Split(m.Options, ","), "nosuid")
			require.Contains(t, strings.Split(m.Options, ","), "nodev")
			if backend == api.BackendOverlay {
				require.Equal(t, "overlay", m.FSType)
			} else {
				require.True(t, strings.HasPrefix(m.FSType, "fuse"), m.FSType)
			}
			b, err := os.ReadFile(filepath.Join(target, "main.go"))
			require.NoError(t, err)
			require.Equal(t, "package main\n", string(b))
			require.NoError(t, os.WriteFile(filepath.Join(target, "out.txt"), []byte("from the pod"), 0o644))

			// The same volume read-only at the same target is another publish.
			_, err = e.node.NodePublishVolume(e.ctx(), &csipb.NodePublishVolumeRequest{VolumeId: "pvc-1", TargetPath: target,
				VolumeCapability: mountCap(), Readonly: true})
			requireCode(t, codes.AlreadyExists, err)

			stats, err := e.node.NodeGetVolumeStats(e.ctx(), &csipb.NodeGetVolumeStatsRequest{VolumeId: "pvc-1", VolumePath: target})
			require.NoError(t, err)
			if backend == api.BackendFUSE {
				require.EqualValues(t, 3, stats.GetUsage()[1].GetUsed(), "files: main.go, README.md, out.txt")
			} else { // the overlay's writes reach the session at the next ingest
				require.GreaterOrEqual(t, stats.GetUsage()[1].GetUsed(), int64(2))
			}

			// A snapshot sees what the pod wrote; a fork of it and a clone of
			// the volume start from it.
			snap, err := e.ctl.CreateSnapshot(e.ctx(), &csipb.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: "pvc-1"})
			require.NoError(t, err)
			require.True(t, snap.GetSnapshot().GetReadyToUse(), "no remote: ready at once")
			fork, err := e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "pvc-fork", VolumeCapabilities: []*csipb.VolumeCapability{mountCap()},
				Parameters:          map[string]string{csi.ParamBackend: backend},
				VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}})
			require.NoError(t, err)
			require.Equal(t, snap.GetSnapshot().GetSnapshotId(), fork.GetVolume().GetContentSource().GetSnapshot().GetSnapshotId())
			clone, err := e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "pvc-clone", VolumeCapabilities: []*csipb.VolumeCapability{mountCap()},
				VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: "pvc-1"}}}})
			require.NoError(t, err)
			for _, id := range []string{fork.GetVolume().GetVolumeId(), clone.GetVolume().GetVolumeId()} {
				s, err := e.session(id)
				require.NoError(t, err)
				require.EqualValues(t, 3, s.Files, "%s has what the pod wrote", id)
			}
			layers := metaLayers(t, e)
			ft := e.target("pod-b", "pvc-fork")
			require.NoError(t, e.publish("pvc-fork", ft, nil))
			require.Equal(t, layers, metaLayers(t, e), "the fork's layer was built at CreateSnapshot")
			b, err = os.ReadFile(filepath.Join(ft, "out.txt"))
			require.NoError(t, err)
			require.Equal(t, "from the pod", string(b))
			require.NoError(t, os.WriteFile(filepath.Join(ft, "out.txt"), []byte("changed in the fork"), 0o644))
			b, err = os.ReadFile(filepath.Join(target, "out.txt"))
			require.NoError(t, err)
			require.Equal(t, "from the pod", string(b), "the fork is apart from its origin")

			_, err = e.ctl.DeleteVolume(e.ctx(), &csipb.DeleteVolumeRequest{VolumeId: "pvc-1"})
			requireCode(t, codes.FailedPrecondition, err, "a published volume is not deleted under its pods")

			for _, p := range [][2]string{{"pvc-1", target}, {"pvc-fork", ft}} {
				require.NoError(t, e.unpublish(p[0], p[1]))
				require.NoError(t, e.unpublish(p[0], p[1]), "unpublish is idempotent")
				require.Nil(t, mountAt(t, p[1]), "nothing mounted at %s", p[1])
				_, err := os.Stat(p[1])
				require.True(t, os.IsNotExist(err), "the target directory is removed")
			}
			s, err = e.session("pvc-1")
			require.NoError(t, err)
			require.Empty(t, s.FuseMounts)
			for _, id := range []string{"pvc-1", "pvc-fork", "pvc-clone"} {
				_, err = e.ctl.DeleteVolume(e.ctx(), &csipb.DeleteVolumeRequest{VolumeId: id})
				require.NoError(t, err)
				_, err = e.session(id)
				require.ErrorIs(t, err, &api.Error{Code: api.CodeNotFound})
			}
			// The snapshot outlives its volume; the volume forked from it
			// kept its content either way.
			_, err = e.ctl.DeleteSnapshot(e.ctx(), &csipb.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()})
			require.NoError(t, err)
		})
	}
}

// TestBadRequestsLeaveNothing: a StorageClass with an unknown parameter, a
// folder outside the allow-roots, a glob that does not parse: each is
// refused with the code CSI expects and a message naming the problem, and
// leaves no session and no record behind.
func TestBadRequestsLeaveNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "x"})
	for _, tc := range []struct {
		name   string
		params map[string]string
		code   codes.Code
		says   string
	}{
		{"unknown", map[string]string{"foldr": "/x"}, codes.InvalidArgument, `unknown parameter "foldr"`},
		{"relative", map[string]string{csi.ParamFolders: "src"}, codes.InvalidArgument, "not an absolute host path"},
		{"backend", map[string]string{csi.ParamBackend: "nfs"}, codes.InvalidArgument, "use overlay, fuse or auto"},
		{"globs-alone", map[string]string{csi.ParamExclude: "*.go"}, codes.InvalidArgument, "give folders too"},
		{"snapshot-in-class", map[string]string{csi.ParamSnapshot: strings.Repeat("a", 64)}, codes.InvalidArgument, "unknown parameter"},
		{"outside-allow-root", map[string]string{csi.ParamFolders: outside}, codes.PermissionDenied, "allow"},
		{"escape", map[string]string{csi.ParamFolders: e.allow + "/../" + filepath.Base(outside)}, codes.PermissionDenied, "allow"},
		{"policy", map[string]string{csi.ParamPolicy: "nonesuch"}, codes.InvalidArgument, "nonesuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "bad-" + tc.name, Parameters: tc.params,
				VolumeCapabilities: []*csipb.VolumeCapability{mountCap()}})
			requireCode(t, tc.code, err)
			require.Contains(t, err.Error(), tc.says)
			_, err = e.session("bad-" + tc.name)
			require.ErrorIs(t, err, &api.Error{Code: api.CodeNotFound}, "no session left")
			_, err = os.Stat(filepath.Join(e.dataDir, "csi", "volumes", "bad-"+tc.name+".json"))
			require.True(t, os.IsNotExist(err), "no record left")
		})
	}
	// Capabilities a node-local file system volume does not serve.
	for _, c := range []*csipb.VolumeCapability{
		{AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}, AccessMode: mountCap().AccessMode},
		{AccessType: mountCap().AccessType, AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}},
		{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{MountFlags: []string{"suid"}}}, AccessMode: mountCap().AccessMode},
	} {
		_, err := e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "cap", VolumeCapabilities: []*csipb.VolumeCapability{c}})
		requireCode(t, codes.InvalidArgument, err)
	}
}

// TestTargetAttacks: a publish target outside the kubelet directory, or
// reached through a symlink planted on the way, is refused and nothing is
// mounted anywhere; neither is a target unpublished there.
func TestTargetAttacks(t *testing.T) {
	e := newEnv(t, envOpts{backend: api.BackendFUSE})
	e.create("vol", nil)
	elsewhere := t.TempDir()
	err := e.publish("vol", filepath.Join(elsewhere, "mount"), nil)
	requireCode(t, codes.InvalidArgument, err)
	require.Contains(t, err.Error(), "not beneath")
	requireCode(t, codes.InvalidArgument, e.publish("vol", e.kubelet+"/../"+filepath.Base(elsewhere)+"/mount", nil))
	requireCode(t, codes.InvalidArgument, e.publish("vol", "relative/mount", nil))
	requireCode(t, codes.InvalidArgument, e.publish("vol", e.kubelet, nil), "the kubelet dir itself")

	// A symlink inside the kubelet dir pointing out of it.
	pods := filepath.Join(e.kubelet, "pods")
	require.NoError(t, os.MkdirAll(pods, 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(pods, "evil")))
	err = e.publish("vol", filepath.Join(pods, "evil", "mount"), nil)
	require.Error(t, err)
	require.Nil(t, mountAt(t, filepath.Join(elsewhere, "mount")), "nothing mounted through the symlink")
	_, serr := os.Stat(filepath.Join(elsewhere, "mount"))
	require.True(t, os.IsNotExist(serr), "no directory made through the symlink")
	// The target itself a symlink to a directory elsewhere.
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "dst"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(pods, "p1"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "dst"), filepath.Join(pods, "p1", "mount")))
	require.Error(t, e.publish("vol", filepath.Join(pods, "p1", "mount"), nil))
	require.Nil(t, mountAt(t, filepath.Join(elsewhere, "dst")))
	s, err := e.session("vol")
	require.NoError(t, err)
	require.Empty(t, s.FuseMounts, "the volume is mounted nowhere")
	requireCode(t, codes.InvalidArgument, e.unpublish("vol", filepath.Join(elsewhere, "dst")))
}

// TestSnapshotIDsAreWhole: the daemon resolves snapshot prefixes, the
// driver never does: a prefix names no snapshot to fork, list or delete.
func TestSnapshotIDsAreWhole(t *testing.T) {
	e := newEnv(t, envOpts{backend: api.BackendFUSE})
	e.create("vol", nil)
	snap, err := e.ctl.CreateSnapshot(e.ctx(), &csipb.CreateSnapshotRequest{Name: "s", SourceVolumeId: "vol"})
	require.NoError(t, err)
	id := snap.GetSnapshot().GetSnapshotId()
	require.Len(t, id, 64)
	prefix := id[:12]
	_, err = e.ctl.CreateVolume(e.ctx(), &csipb.CreateVolumeRequest{Name: "f", VolumeCapabilities: []*csipb.VolumeCapability{mountCap()},
		VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: prefix}}}})
	requireCode(t, codes.NotFound, err)
	l, err := e.ctl.ListSnapshots(e.ctx(), &csipb.ListSnapshotsRequest{SnapshotId: prefix})
	require.NoError(t, err)
	require.Empty(t, l.GetEntries())
	_, err = e.ctl.DeleteSnapshot(e.ctx(), &csipb.DeleteSnapshotRequest{SnapshotId: prefix})
	require.NoError(t, err)
	got, err := e.d.GetSnapshot(context.Background(), id)
	require.NoError(t, err, "a prefix deleted nothing")
	require.Equal(t, id, got.ID)
}

// TestInlineVolumes: an inline ephemeral volume (the kubelet's handle and
// attributes) is a session of its own, made at publish (here an O(1) fork
// of a snapshot) and closed at unpublish; staging host folders from a
// pod's attributes is refused unless the driver allows it.
func TestInlineVolumes(t *testing.T) {
	e := newEnv(t, envOpts{backend: api.BackendFUSE})
	src := filepath.Join(e.allow, "app")
	writeTree(t, src, map[string]string{"a.txt": "a"})
	e.create("base", map[string]string{csi.ParamFolders: src})
	snap, err := e.ctl.CreateSnapshot(e.ctx(), &csipb.CreateSnapshotRequest{Name: "golden", SourceVolumeId: "base"})
	require.NoError(t, err)

	handle := "csi-" + strings.Repeat("0123456789abcdef", 4) // as long as the kubelet's
	target := e.target("pod-x", "ws")
	attrs := map[string]string{"csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.name": "x",
		csi.ParamSnapshot: snap.GetSnapshot().GetSnapshotId()}
	require.NoError(t, e.publish(handle, target, attrs))
	require.NoError(t, e.publish(handle, target, attrs), "idempotent")
	b, err := os.ReadFile(filepath.Join(target, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "a", string(b))
	_, err = e.node.NodeGetVolumeStats(e.ctx(), &csipb.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: target})
	require.NoError(t, err)
	list, err := e.d.ListSessions(context.Background())
	require.NoError(t, err)
	require.Len(t, list.Sessions, 2, "base and the inline volume's session")
	require.NoError(t, e.unpublish(handle, target))
	require.Nil(t, mountAt(t, target))
	list, err = e.d.ListSessions(context.Background())
	require.NoError(t, err)
	require.Len(t, list.Sessions, 1, "the inline session is closed with its pod")

	// Folders from a pod's attributes: refused, nothing left.
	t2 := e.target("pod-y", "ws")
	err = e.publish(handle+"2", t2, map[string]string{"csi.storage.k8s.io/ephemeral": "true", csi.ParamFolders: src})
	requireCode(t, codes.PermissionDenied, err)
	require.Contains(t, err.Error(), "--inline-folders")
	require.Nil(t, mountAt(t, t2))
	list, err = e.d.ListSessions(context.Background())
	require.NoError(t, err)
	require.Len(t, list.Sessions, 1)
	// A bad attribute names itself.
	err = e.publish(handle+"3", t2, map[string]string{"csi.storage.k8s.io/ephemeral": "true", csi.ParamSnapshot: "abc"})
	requireCode(t, codes.InvalidArgument, err)
	require.Contains(t, err.Error(), "full ID")
}

// TestInlineFoldersWhenAllowed: with --inline-folders a pod's attributes
// stage folders, still only beneath the allow-roots.
func TestInlineFoldersWhenAllowed(t *testing.T) {
	e := newEnv(t, envOpts{backend: api.BackendFUSE, inlineFolders: true})
	src := filepath.Join(e.allow, "app")
	writeTree(t, src, map[string]string{"a.txt": "a", "b.log": "b"})
	target := e.target("pod-z", "ws")
	require.NoError(t, e.publish("csi-inline-1", target, map[string]string{"csi.storage.k8s.io/ephemeral": "true",
		csi.ParamFolders: src, csi.ParamInclude: "*.txt"}))
	names, err := os.ReadDir(target)
	require.NoError(t, err)
	require.Len(t, names, 1)
	require.NoError(t, e.unpublish("csi-inline-1", target))
	err = e.publish("csi-inline-2", e.target("pod-w", "ws"), map[string]string{"csi.storage.k8s.io/ephemeral": "true", csi.ParamFolders: "/etc"})
	requireCode(t, codes.PermissionDenied, err)
}
