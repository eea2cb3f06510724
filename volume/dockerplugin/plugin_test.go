package dockerplugin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

func TestActivateAndCapabilities(t *testing.T) {
	e := newEnv(t, "")
	require.Equal(t, []any{"VolumeDriver"}, e.ok("Plugin.Activate", nil)["Implements"])
	require.Equal(t, map[string]any{"Scope": "local"}, e.ok("VolumeDriver.Capabilities", nil)["Capabilities"])
	require.Equal(t, []any{}, e.ok("VolumeDriver.List", nil)["Volumes"])

	resp, err := e.http.Post("http://plugin/VolumeDriver.Snapshot", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = e.http.Get("http://plugin/VolumeDriver.List")
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusOK, resp.StatusCode, "the protocol posts")

	fi, err := os.Stat(e.socket)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only root (dockerd) reaches the socket")
}

// TestBadOptionsLeaveNothing: every refused create names what was wrong
// and leaves no session, record or mount point behind.
func TestBadOptionsLeaveNothing(t *testing.T) {
	e := newEnv(t, "")
	outside := t.TempDir() // not beneath the allow-root
	for _, tc := range []struct {
		name string
		body vol
		says []string
	}{
		{"unknown option", vol{Name: "v1", Opts: map[string]string{"folder": e.src, "inclde": "*.go"}},
			[]string{`option inclde="*.go"`, "they take folder, include, exclude"}},
		{"bad backend", vol{Name: "v1", Opts: map[string]string{"backend": "zfs"}}, []string{"option backend", "fuse (the default), overlay or auto"}},
		{"bad quota", vol{Name: "v1", Opts: map[string]string{"quota": "lots"}}, []string{"option quota", "like 16GiB"}},
		{"folder outside the allow-roots", vol{Name: "v1", Opts: map[string]string{"folder": outside}}, []string{"stage folder", "outside the allowed roots"}},
		{"folder escapes", vol{Name: "v1", Opts: map[string]string{"folder": e.src + "/../" + filepath.Base(outside)}}, []string{"option folder", `".."`}},
		{"missing folder", vol{Name: "v1", Opts: map[string]string{"folder": filepath.Join(e.src, "nope")}}, []string{"host folder", "does not exist"}},
		{"fork of nothing", vol{Name: "v1", Opts: map[string]string{"fork": "nosuchthing"}}, []string{"option fork=", "no session has that ID"}},
		{"bad policy", vol{Name: "v1", Opts: map[string]string{"policy": "lax"}}, []string{"option policy", "a policy preset"}},
		{"bad policy object", vol{Name: "v1", Opts: map[string]string{"policy": `{"caps":{"max_files":"many"}}`}}, []string{"policy"}},
		{"name that is a path", vol{Name: "../etc", Opts: nil}, []string{"volume name", "1-64 letters"}},
		{"too-long name", vol{Name: strings.Repeat("a", 65)}, []string{"volume name"}},
		{"uid with overlay", vol{Name: "v1", Opts: map[string]string{"backend": "overlay", "uid": "1000"}}, []string{"option uid", "maps no uid/gid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("VolumeDriver.Create", tc.body, tc.says...)
			require.Empty(t, e.sessions())
			require.Empty(t, e.stateFiles())
			e.fails("VolumeDriver.Get", vol{Name: tc.body.Name}, "no vfsd volume")
		})
	}
	// A session made otherwise is not a volume, and its name is taken.
	_, err := e.d.CreateSession(context.Background(), api.CreateSessionRequest{ID: "agent"}, nil)
	require.NoError(t, err)
	e.fails("VolumeDriver.Create", vol{Name: "agent"}, "not a Docker volume", "-o fork=agent")
	e.fails("VolumeDriver.Get", vol{Name: "agent"}, "no vfsd volume")
	e.fails("VolumeDriver.Remove", vol{Name: "agent"}, "no vfsd volume")
	require.Equal(t, []any{}, e.ok("VolumeDriver.List", nil)["Volumes"], "docker volume prune cannot reach sessions that are not volumes")
	require.Equal(t, []string{"agent"}, e.sessions())
}

// TestVolumeLifecycle: create stages the folder as the options shape it;
// mounts are counted by mount ID (two containers share one mount); what is
// written through the mount is the session's; remove closes the session.
func TestVolumeLifecycle(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	e := newEnv(t, "")
	ctx := context.Background()
	e.ok("VolumeDriver.Create", vol{Name: "ws1", Opts: map[string]string{"folder": e.src, "include": "**/*.go", "exclude": "vendor/**"}})
	require.Equal(t, []any{map[string]any{"Name": "ws1"}}, e.ok("VolumeDriver.List", nil)["Volumes"])
	e.fails("VolumeDriver.Create", vol{Name: "ws1"}, "volume ws1 exists")
	require.Empty(t, e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"], "not mounted yet")
	s, err := e.d.Session(ctx, "ws1")
	require.NoError(t, err)
	require.Equal(t, int64(2), s.Files, "main.go and lib/lib.go; README.md and vendor/ left out")
	require.Equal(t, "docker volume ws1", s.Label)
	require.Nil(t, s.ExpiresAt, "a volume lives until docker volume rm")

	dir := e.ok("VolumeDriver.Mount", vol{Name: "ws1", ID: "c1"})["Mountpoint"].(string)
	require.Equal(t, dir, e.ok("VolumeDriver.Mount", vol{Name: "ws1", ID: "c2"})["Mountpoint"], "a second container shares the mount")
	require.Equal(t, dir, e.ok("VolumeDriver.Mount", vol{Name: "ws1", ID: "c2"})["Mountpoint"], "the same ID again changes nothing")
	flags := mountFlags(t, dir)
	require.Contains(t, strings.Split(flags, ","), "nosuid", flags)
	require.Contains(t, strings.Split(flags, ","), "nodev", flags)
	b, err := os.ReadFile(filepath.Join(dir, "lib", "lib.go"))
	require.NoError(t, err)
	require.Equal(t, "package lib\n", string(b))
	_, err = os.Stat(filepath.Join(dir, "README.md"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out.txt"), []byte("built\n"), 0o644))
	require.Equal(t, []string{"added /out.txt"}, e.changed("ws1"), "the session sees what the container wrote")
	r, err := e.d.CallTool(ctx, "ws1", "read_file", json.RawMessage(`{"path":"out.txt"}`), "http", "")
	require.NoError(t, err)
	require.False(t, r.IsError, "%s", r.Body)
	require.Contains(t, string(r.Body), "built")

	got := e.ok("VolumeDriver.Get", vol{Name: "ws1"})["Volume"].(map[string]any)
	require.Equal(t, dir, got["Mountpoint"])
	require.Equal(t, "ws1", got["Status"].(map[string]any)["session"])
	require.EqualValues(t, 2, got["Status"].(map[string]any)["mounts"])

	e.ok("VolumeDriver.Unmount", vol{Name: "ws1", ID: "c1"})
	require.Equal(t, dir, e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"], "c2 still holds it")
	require.NotEmpty(t, mountFlags(t, dir))
	e.ok("VolumeDriver.Unmount", vol{Name: "ws1", ID: "c1"}) // released already: idempotent
	e.ok("VolumeDriver.Unmount", vol{Name: "ws1", ID: "c2"})
	require.Empty(t, mountFlags(t, dir), "the last unmount takes the mount down")
	require.Empty(t, e.ok("VolumeDriver.Path", vol{Name: "ws1"})["Mountpoint"])

	// A snapshot taken of the volume outlives it (the default contract
	// keeps them); the fork of it is O(1) and independent.
	snap, err := e.d.Snapshot(ctx, "ws1", "before rm", nil)
	require.NoError(t, err)
	e.ok("VolumeDriver.Remove", vol{Name: "ws1"})
	require.Empty(t, e.sessions())
	require.Empty(t, e.stateFiles())
	require.Equal(t, []any{}, e.ok("VolumeDriver.List", nil)["Volumes"])
	e.fails("VolumeDriver.Remove", vol{Name: "ws1"}, "no vfsd volume")
	_, err = e.d.GetSnapshot(ctx, snap.ID)
	require.NoError(t, err, "docker volume rm closes the session; its snapshots stay")
	e.ok("VolumeDriver.Create", vol{Name: "ws2", Opts: map[string]string{"fork": snap.ID[:12]}})
	s, err = e.d.Session(ctx, "ws2")
	require.NoError(t, err)
	require.Equal(t, snap.ID, s.Base)
	require.Equal(t, int64(3), s.Files)
}

// TestForkOfLiveVolume: -o fork=NAME of a mounted volume forks what its
// containers wrote, and the two volumes are independent.
func TestForkOfLiveVolume(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	e := newEnv(t, "")
	e.ok("VolumeDriver.Create", vol{Name: "a", Opts: map[string]string{"folder": e.src}})
	da := e.ok("VolumeDriver.Mount", vol{Name: "a", ID: "x"})["Mountpoint"].(string)
	require.NoError(t, os.WriteFile(filepath.Join(da, "new.txt"), []byte("1"), 0o644))
	e.ok("VolumeDriver.Create", vol{Name: "b", Opts: map[string]string{"fork": "a", "readonly": ""}})
	db := e.ok("VolumeDriver.Mount", vol{Name: "b", ID: "y"})["Mountpoint"].(string)
	b, err := os.ReadFile(filepath.Join(db, "new.txt"))
	require.NoError(t, err)
	require.Equal(t, "1", string(b))
	require.ErrorIs(t, os.WriteFile(filepath.Join(db, "other.txt"), nil, 0o644), syscall.EROFS, "readonly")
	require.NoError(t, os.WriteFile(filepath.Join(da, "later.txt"), []byte("2"), 0o644))
	_, err = os.Stat(filepath.Join(db, "later.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "a fork does not see its origin's later writes")
	s, err := e.d.Session(context.Background(), "b")
	require.NoError(t, err)
	require.Equal(t, "a", s.ForkOf)
}

// TestQuotaAndPolicyHold: a volume's quota and policy are its session's,
// enforced on what containers write through the mount.
func TestQuotaAndPolicyHold(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	e := newEnv(t, "")
	e.ok("VolumeDriver.Create", vol{Name: "q", Opts: map[string]string{"quota": "64K", "policy": "x07"}})
	s, err := e.d.Session(context.Background(), "q")
	require.NoError(t, err)
	require.Equal(t, "x07", s.Policy)
	require.Equal(t, int64(64<<10), s.Quota.MaxBytes)
	dir := e.ok("VolumeDriver.Mount", vol{Name: "q", ID: "1"})["Mountpoint"].(string)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small"), make([]byte, 1<<10), 0o644))
	err = os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644)
	require.ErrorIs(t, err, syscall.EDQUOT, "the session's byte quota holds through the mount")
}

// TestRestartKeepsVolumes: after the daemon restarts (the plugin with it),
// the volume is still listed, mounted where it was, and the mount IDs
// recorded before still count: the last one's unmount takes it down.
// A session closed while the plugin was away takes its volume with it.
func TestRestartKeepsVolumes(t *testing.T) {
	if !fuseAvailable() {
		t.Skip("needs /dev/fuse and root")
	}
	e := newEnv(t, "")
	e.ok("VolumeDriver.Create", vol{Name: "keep", Opts: map[string]string{"folder": e.src}})
	e.ok("VolumeDriver.Create", vol{Name: "lost"})
	dir := e.ok("VolumeDriver.Mount", vol{Name: "keep", ID: "c1"})["Mountpoint"].(string)
	e.ok("VolumeDriver.Mount", vol{Name: "keep", ID: "c2"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.txt"), []byte("w"), 0o644))
	e.stop()
	require.Empty(t, mountFlags(t, dir), "a stopped daemon unmounts")

	// Closed with the plugin away: the record outlives its session.
	e.start()
	require.NoError(t, e.d.CloseSession(context.Background(), "lost", nil))
	e.fails("VolumeDriver.Get", vol{Name: "lost"}, "closed outside Docker", "docker volume rm lost")
	e.ok("VolumeDriver.Remove", vol{Name: "lost"}) // Docker may forget it
	e.stop()

	e.start()
	require.Equal(t, []any{map[string]any{"Name": "keep", "Mountpoint": dir}}, e.ok("VolumeDriver.List", nil)["Volumes"])
	b, err := os.ReadFile(filepath.Join(dir, "w.txt"))
	require.NoError(t, err, "mounted again at start")
	require.Equal(t, "w", string(b))
	e.ok("VolumeDriver.Unmount", vol{Name: "keep", ID: "c1"})
	require.NotEmpty(t, mountFlags(t, dir), "c2 still holds it")
	e.ok("VolumeDriver.Unmount", vol{Name: "keep", ID: "c2"})
	require.Empty(t, mountFlags(t, dir))
	require.Equal(t, []string{"keep"}, e.sessions())
}
