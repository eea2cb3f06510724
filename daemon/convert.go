package daemon

import (
	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
)

// fromAPIMounts converts wire mounts to the importer's.
func fromAPIMounts(ms []api.Mount) []hostmount.Mount {
	out := make([]hostmount.Mount, len(ms))
	for i, m := range ms {
		out[i] = hostmount.Mount{HostPath: m.HostPath, MountPath: m.MountPath, Include: m.Include,
			Exclude: m.Exclude, MaxBytes: m.MaxBytes, FollowSymlinks: m.FollowSymlinks,
			Gitignore: m.Gitignore, DefaultExcludes: m.DefaultExcludes}
	}
	return out
}

// toAPIMounts converts the importer's mounts to wire mounts.
func toAPIMounts(ms []hostmount.Mount) []api.Mount {
	if len(ms) == 0 {
		return nil
	}
	out := make([]api.Mount, len(ms))
	for i, m := range ms {
		out[i] = api.Mount{HostPath: m.HostPath, MountPath: m.MountPath, Include: m.Include,
			Exclude: m.Exclude, MaxBytes: m.MaxBytes, FollowSymlinks: m.FollowSymlinks,
			Gitignore: m.Gitignore, DefaultExcludes: m.DefaultExcludes}
	}
	return out
}

// importReport converts an import report to the wire's.
func importReport(r *hostmount.Report) *api.ImportReport {
	out := &api.ImportReport{Snapshot: r.Snapshot, Files: r.Files, Dirs: r.Dirs, Symlinks: r.Symlinks, Special: r.Special, Links: r.Links,
		Bytes: r.Bytes, Cached: r.Cached, ScanMs: r.ScanMs, TotalMs: r.TotalMs,
		Skipped: make([]api.ImportSkip, len(r.Skipped)), Mounts: make([]api.ImportMountReport, len(r.Mounts))}
	for i, s := range r.Skipped {
		out.Skipped[i] = api.ImportSkip{HostPath: s.HostPath, Reason: s.Reason, Xattr: s.Xattr}
	}
	for i, m := range r.Mounts {
		out.Mounts[i] = api.ImportMountReport{HostPath: m.HostPath, MountPath: m.MountPath, Files: m.Files, Bytes: m.Bytes}
	}
	return out
}

func applyReport(r *hostmount.ApplyReport) api.ApplyReport {
	conv := func(cs []hostmount.ApplyChange) []api.ApplyChange {
		out := make([]api.ApplyChange, len(cs))
		for i, c := range cs {
			out[i] = api.ApplyChange{Path: c.Path, HostPath: c.HostPath, Action: c.Action, Conflict: c.Conflict, Note: c.Note}
		}
		return out
	}
	return api.ApplyReport{DryRun: r.DryRun, Applied: conv(r.Applied), Conflicts: conv(r.Conflicts), Outside: r.Outside}
}
