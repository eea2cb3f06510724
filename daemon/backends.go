package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/mount/overlay"
	"github.com/vfsd/vfsd/vfs"
)

// chooseBackend resolves a mount request's backend, and says why:
// "fuse" (the default), "overlay" (refused where it cannot mount, and with
// a uid/gid mapping, which it does not do) or "auto" (overlay where it
// can, FUSE otherwise).
func chooseBackend(req api.MountRequest) (backend, why string, err error) {
	switch req.Backend {
	case "":
		return api.BackendFUSE, "the default", nil
	case api.BackendFUSE:
		return api.BackendFUSE, "asked for", nil
	case api.BackendOverlay:
		if req.UID != 0 || req.GID != 0 {
			return "", "", apiErr(api.CodeInvalidInput, "the overlay backend shows owners as stored and maps no uid/gid; drop --uid/--gid or use --backend fuse")
		}
		if err := overlay.Available(); err != nil {
			return "", "", apiErr(api.CodeUnavailable, "%v", err)
		}
		return api.BackendOverlay, "asked for", nil
	case api.BackendAuto:
		if req.UID != 0 || req.GID != 0 {
			return api.BackendFUSE, "auto: a uid/gid mapping needs FUSE (the overlay maps no owners)", nil
		}
		if err := overlay.Available(); err != nil {
			return api.BackendFUSE, "auto: the kernel overlay is not available here (" + err.Error() + ")", nil
		}
		return api.BackendOverlay, "auto: the kernel overlay is available here", nil
	}
	return "", "", apiErr(api.CodeInvalidInput, "backend %q: use fuse, overlay or auto", req.Backend)
}

// overlayStateDir is where the overlay mount of session id at dir keeps
// its upper and work directories: the same for the same mount, so a
// restarted daemon finds (and ingests) what a killed one left.
func (d *Daemon) overlayStateDir(id, dir string) string {
	return filepath.Join(d.cfg.DataDir, "overlay", "mounts", id+"-"+vfs.HashOf([]byte(dir)).Short())
}

// mountOverlay mounts e at fm.Dir with the kernel overlay backend (taking
// over the mount a killed daemon left there). e.hostMu is held.
func (d *Daemon) mountOverlay(e *entry, fm api.FuseMount) error {
	m, err := overlay.New(context.Background(), d.repo, e.s, fm.Dir, overlay.Options{
		StateDir:     d.overlayStateDir(e.id, fm.Dir),
		MetaCache:    d.overlayMetaCache(),
		ReadOnly:     fm.ReadOnly,
		AllowSetID:   fm.AllowSetID,
		AllowDevices: fm.AllowDevices,
		Logf: func(format string, args ...any) {
			d.log.Error(fmt.Sprintf(format, args...), "session", e.id)
		},
	})
	if err != nil {
		code := api.CodeUnavailable
		if vfs.CodeOf(err) == vfs.CodeTooLarge {
			code = api.CodeTooLarge // a remote fork larger than the blob cache
		}
		return apiErr(code, "%v", err)
	}
	meta, ing := m.Meta(), m.LastIngest()
	d.log.Info("overlay mounted", "session", e.id, "dir", fm.Dir, "base", m.Base(), "meta_cached", meta.Cached,
		"meta_entries", meta.Entries, "meta_build", meta.Duration, "ingested", ing.Changes)
	e.mu.Lock()
	e.fuse[fm.Dir] = m
	e.mu.Unlock()
	return nil
}

// settle has every mount of e hand the session what it acknowledged (the
// overlay ingests its upper directory), so that snapshots, diffs, applies
// and tool calls see what programs in the mounts did.
func (d *Daemon) settle(ctx context.Context, e *entry) error {
	e.mu.Lock()
	mounts := make([]mount.Backend, 0, len(e.fuse))
	for _, m := range e.fuse {
		mounts = append(mounts, m)
	}
	e.mu.Unlock()
	var errs []error
	for _, m := range mounts {
		if err := m.Sync(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// A change a mount made that the session refused (over its quota,
		// a name no path can hold) is reported with the code a tool gets
		// for the same change; the mount has undone it.
		code := api.CodeInternal
		var ve *vfs.Error
		if errors.As(errs[0], &ve) {
			code = vfsCode(ve.Code)
		}
		return apiErr(code, "session %s: take in the changes made through its mounts: %v", e.id, errs[0])
	}
	return nil
}
