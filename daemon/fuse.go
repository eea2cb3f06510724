package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/internal/mountinfo"
	"github.com/vfsd/vfsd/mount"
)

// Mount mounts session id at a host directory, through FUSE or the
// kernel overlay (req.Backend). The mount
// is kept in the session's metadata and mounted again when the daemon
// restarts.
func (d *Daemon) Mount(ctx context.Context, id string, req api.MountRequest) (*api.FuseMount, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if req.Dir == "" || !filepath.IsAbs(req.Dir) {
		return nil, apiErr(api.CodeInvalidInput, "dir must be an absolute host directory to mount the session at, not %q", req.Dir)
	}
	// default_permissions is on unless asked off, and always with
	// allow_other (mount.Options enforces it too): the server checks no
	// permissions itself.
	noDP := req.NoDefaultPermissions && !req.AllowOther
	fm := api.FuseMount{Dir: filepath.Clean(req.Dir), ReadOnly: req.ReadOnly, AllowOther: req.AllowOther,
		DefaultPermissions: !noDP, NoDefaultPermissions: noDP, UID: req.UID, GID: req.GID,
		AllowSetID: req.AllowSetID, AllowDevices: req.AllowDevices}
	backend, why, err := chooseBackend(req)
	if err != nil {
		return nil, err
	}
	fm.BackendWhy = why
	if backend == api.BackendOverlay {
		fm.Backend = backend
	}
	if fi, err := os.Stat(fm.Dir); err != nil || !fi.IsDir() {
		return nil, apiErr(api.CodeInvalidInput, "cannot mount at %s: it is not an existing directory; create it first", fm.Dir)
	}
	if owner := d.fuseOwner(fm.Dir); owner != "" {
		if mounted, known := mountedAt(fm.Dir); !known || mounted {
			return nil, apiErr(api.CodeConflict, "session %s is already mounted at %s; unmount it first (vfsd unmount %s)", owner, fm.Dir, fm.Dir)
		}
		// Unmounted behind the daemon's back (a plain umount): forget it.
		if err := d.forgetMount(owner, fm.Dir); err != nil {
			return nil, err
		}
	}
	if mounted, _ := mountedAt(fm.Dir); mounted {
		return nil, apiErr(api.CodeConflict, "something else is mounted at %s; unmount it first, or choose another directory", fm.Dir)
	}
	if name, err := firstEntry(fm.Dir); err != nil {
		return nil, apiErr(api.CodeInvalidInput, "cannot mount at %s: %v", fm.Dir, err)
	} else if name != "" {
		return nil, apiErr(api.CodeInvalidInput, "cannot mount at %s: it is not empty (it holds %q), and the mount would hide what it holds; choose an empty directory", fm.Dir, name)
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	if err := d.mountFuse(e, fm); err != nil {
		// auto takes the overlay where it can; a remote fork whose blobs
		// do not fit the local cache cannot be served by the kernel, but
		// FUSE fetches them on first read.
		var ae *api.Error
		if req.Backend != api.BackendAuto || fm.Backend != api.BackendOverlay || !errors.As(err, &ae) || ae.Code != api.CodeTooLarge {
			return nil, err
		}
		d.log.Info("auto backend: the overlay cannot hold this session locally, mounting with FUSE", "session", e.id, "reason", ae.Message)
		fm.Backend = ""
		fm.BackendWhy = "auto: the overlay cannot hold this session locally (" + ae.Message + "); FUSE fetches its content on first read"
		if err := d.mountFuse(e, fm); err != nil {
			return nil, err
		}
	}
	if err := d.updateMeta(e, func(m *sessionMeta) { m.Fuse = append(m.Fuse, fm) }); err != nil {
		d.unmountFuse(e, fm.Dir)
		return nil, err
	}
	d.log.Info("session mounted", "session", e.id, "dir", fm.Dir)
	return &fm, nil
}

// Unmount unmounts session id's mount at dir, or all of them when dir is
// "".
func (d *Daemon) Unmount(ctx context.Context, id, dir string) error {
	e, err := d.lookup(id)
	if err != nil {
		return err
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	e.mu.Lock()
	var dirs []string
	for _, fm := range e.meta.Fuse {
		if dir == "" || fm.Dir == filepath.Clean(dir) {
			dirs = append(dirs, fm.Dir)
		}
	}
	e.mu.Unlock()
	if dir != "" && len(dirs) == 0 {
		return apiErr(api.CodeNotFound, "session %s is not mounted at %s; see its fuse_mounts (vfsd session show %s)", e.id, dir, e.id)
	}
	var firstErr error
	for _, d2 := range dirs {
		if err := d.unmountFuse(e, d2); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := d.updateMeta(e, func(m *sessionMeta) {
		m.Fuse = slices.DeleteFunc(m.Fuse, func(fm api.FuseMount) bool { return slices.Contains(dirs, fm.Dir) })
	}); err != nil {
		return err
	}
	return firstErr
}

// fuseOwner returns the session mounted at dir, or "".
func (d *Daemon) fuseOwner(dir string) string {
	for _, e := range d.entries() {
		e.mu.Lock()
		_, ok := e.fuse[dir]
		e.mu.Unlock()
		if ok {
			return e.id
		}
	}
	return ""
}

// mountFuse mounts e at fm.Dir. e.hostMu is held.
func (d *Daemon) mountFuse(e *entry, fm api.FuseMount) error {
	e.mu.Lock()
	gone := e.gone
	e.mu.Unlock()
	if gone { // closeSession, which holds hostMu, has unmounted everything
		return errClosed(e.id)
	}
	fm.DefaultPermissions = !fm.NoDefaultPermissions || fm.AllowOther // records from before the field
	if fm.Backend == api.BackendOverlay {
		return d.mountOverlay(e, fm)
	}
	m, err := mount.New(e.s, fm.Dir, mount.Options{ReadOnly: fm.ReadOnly, AllowOther: fm.AllowOther,
		NoDefaultPermissions: !fm.DefaultPermissions, UID: fm.UID, GID: fm.GID,
		AllowSetID: fm.AllowSetID, AllowDevices: fm.AllowDevices})
	if err != nil {
		return apiErr(api.CodeUnavailable, "%v", err)
	}
	e.mu.Lock()
	e.fuse[fm.Dir] = m
	e.mu.Unlock()
	return nil
}

// unmountFuse unmounts e's mount at dir. e.hostMu is held.
func (d *Daemon) unmountFuse(e *entry, dir string) error {
	e.mu.Lock()
	m := e.fuse[dir]
	delete(e.fuse, dir)
	e.mu.Unlock()
	if m == nil {
		return nil
	}
	if err := m.Unmount(); err != nil {
		if mounted, known := mountedAt(dir); known && !mounted {
			// Unmounted behind the daemon's back (a plain umount): done.
			d.log.Info("session was unmounted already", "session", e.id, "dir", dir)
			return nil
		}
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	d.log.Info("session unmounted", "session", e.id, "dir", dir)
	return nil
}

// forgetMount drops session id's mount at dir, which is no longer mounted.
func (d *Daemon) forgetMount(id, dir string) error {
	e, err := d.lookup(id)
	if err != nil {
		return nil // closed meanwhile: nothing to forget
	}
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	_ = d.unmountFuse(e, dir)
	return d.updateMeta(e, func(m *sessionMeta) {
		m.Fuse = slices.DeleteFunc(m.Fuse, func(fm api.FuseMount) bool { return fm.Dir == dir })
	})
}

// firstEntry returns the name of an entry of directory dir, or "" when
// it is empty.
func firstEntry(dir string) (string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return names[0], nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return "", nil
}

// mountedAt reports whether anything is mounted at dir, from
// /proc/self/mountinfo; known is false where that cannot be told.
func mountedAt(dir string) (mounted, known bool) {
	ms, err := mountinfo.Read()
	for _, m := range ms {
		if m.MountPoint == dir {
			return true, true
		}
	}
	return false, err == nil
}

// remount mounts a recovered session's FUSE mounts again, detaching first
// the dead mount a crashed daemon left behind. A mount that fails is
// logged and dropped from the metadata.
func (d *Daemon) remount(e *entry) {
	e.hostMu.Lock()
	defer e.hostMu.Unlock()
	e.mu.Lock()
	wanted := slices.Clone(e.meta.Fuse)
	e.mu.Unlock()
	var failed []string
	for _, fm := range wanted {
		if stale, _ := vfsdMountAt(fm.Dir); stale && fm.Backend != api.BackendOverlay {
			detachMount(fm.Dir)
		}
		if err := d.mountFuse(e, fm); err != nil {
			d.log.Error("mount a session again", "session", e.id, "dir", fm.Dir, "err", err)
			failed = append(failed, fm.Dir)
			continue
		}
		d.log.Info("session mounted again", "session", e.id, "dir", fm.Dir)
	}
	if len(failed) > 0 {
		if err := d.updateMeta(e, func(m *sessionMeta) {
			m.Fuse = slices.DeleteFunc(m.Fuse, func(fm api.FuseMount) bool { return slices.Contains(failed, fm.Dir) })
		}); err != nil {
			d.log.Error("save session metadata", "session", e.id, "err", err)
		}
	}
}

// vfsdMountAt reports whether a vfsd FUSE mount is mounted at dir, from
// /proc/self/mountinfo: only those are detached at start.
func vfsdMountAt(dir string) (bool, error) {
	ms, err := mountinfo.Read()
	for _, m := range ms {
		if m.MountPoint == dir && strings.HasPrefix(m.FSType, "fuse") && strings.HasPrefix(m.Source, "vfsd:") {
			return true, nil
		}
	}
	return false, err
}
