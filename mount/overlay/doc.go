// Package overlay serves a session at a host directory through the
// kernel's overlayfs: the overlay backend of vfsd's mounts, beside the FUSE
// backend of package mount. Programs read and write at the kernel's speed;
// the session stays the state of record, and the daemon keeps the two in
// step. It needs root and Linux 6.5 or later (Available); elsewhere New
// fails with ErrUnsupported.
//
// # Model
//
// A Mount is one session mounted at one directory. Its lower layers are a
// state of the session, the snapshot the mount takes when it mounts (its
// base, labelled BaseLabel):
//
//   - the metadata layer (meta.go, BuildMeta): one node per node of the
//     tree, with its owner, mode, times and extended attributes, and every
//     non-empty regular file as a sparse file of its size whose overlay
//     attributes (trusted.overlay.metacopy and redirect) name its blob;
//   - the repository's blobs directory (a snapshot.LocalStore's) as a
//     data-only layer beneath it, where the kernel reads file content
//     straight from the blobs. The base's blobs are made local and held
//     while mounted (snapshot.Repo.HoldLocal), as a remote fork may lack
//     them.
//
// Metadata layers are cached in Options.MetaCache, one per state (MetaKey:
// two snapshots of the same state share one) and shared by mounts;
// CollectMeta removes the unused ones beyond a bound, never one a mount of
// this process holds, one an overlay mounted on the machine uses (from
// /proc/self/mountinfo) or one used in the last minute (metacache.go).
//
// The upper directory (with overlayfs's work directory, both in
// Options.StateDir) collects what programs change. Ingest (ingest.go)
// reads it and brings the session to base ⊕ upper: new and changed nodes,
// whiteouts (deletions), opaque directories (replaced ones), redirects
// (renamed directories) and metadata-only copy-ups (a chmod that kept the
// content); changed files' content is stored as blobs, ahead of the
// session's changes and several files at a time (prestore.go), by the
// store's PutFile: a clone where the filesystem shares extents, else a
// copy. Upper files are never linked into the store: programs may write
// them again, through this mount or after a takeover mounts the same upper
// directory. An ingest costs
// what changed since mounted: files unchanged since they were last hashed
// and directories unchanged since they were last listed are skipped. Sync
// is an ingest whose changes are durable on return; the daemon calls it
// before snapshots, diffs, applies and tool calls.
//
// The other way, the mirror (mirror.go) applies every change others make
// to the session (a tool's) to the merged directory as it happens, so that
// programs see it at once and both show the same state. A restore or
// rewind replaces the session's state: the mount then mounts the new state
// as a fresh base.
//
// # Invariants
//
//   - The lower layers never change while mounted; a metadata layer in the
//     cache is whole (built in a temporary directory and renamed) and never
//     changed afterwards.
//   - The daemon, often root, never follows a path in the merged or upper
//     directory: programs using the mount can change both while it works.
//     It holds the two roots open and reaches every node through
//     descriptors, opened beneath their parent with no symlink followed and
//     no mount crossed (package internal/beneath). A node replaced while it
//     is read is left for the next ingest, never read in its stead; a
//     directory swapped for a symlink fails a mirror, never redirects it.
//   - After an ingest the mount and the session agree: a change the
//     session cannot take — past its quota, or a name no session path can
//     hold — is undone in the merged directory and reported with the code
//     a tool gets for it (too_large with EDQUOT, invalid_path; refuse.go).
//     An ingest keeps in memory no more upper entries than the session's
//     quota of entries could make valid (entryBudget).
//   - Set-ID bits, file capabilities and device nodes of the session take
//     no effect through the mount (nosuid, nodev) unless the admin asked
//     (Options.AllowSetID, AllowDevices); a mount taken over is held to the
//     same flags.
//   - Nothing the kernel acknowledged is lost when the daemon is killed.
//     StateDir keeps the mount's state (state.json: session, directory,
//     base snapshot) beside the upper directory, and New with that StateDir
//     takes the mount over: adopted if it is still mounted there (an
//     overlay at the directory with this upper directory, in mountinfo),
//     mounted again otherwise, and its upper directory ingested in full.
//     Detach leaves the state for such a takeover (a daemon restarting);
//     Unmount ingests, syncs, unmounts and removes it.
//
// # Concurrency and lock order
//
// A Mount is safe for concurrent use. Mount.mu serialises ingest,
// mirroring and remounts, and is taken before the session's locks (the
// order of package vfs), never after. The mirror runs as a session
// subscriber, on the goroutine that changed the session, after the
// session's locks are released; the session changes an ingest makes carry
// the mount's own origin and are not mirrored, so an ingest never waits on
// itself. The registry of metadata layers held by this process (held, in
// metacache.go) is a leaf, taken under Mount.mu.
//
// # Where to start reading
//
// options.go (Options and the reports), then overlay.go (New, setup and
// mountBase for mounting and takeover; Ingest, Sync, Unmount, Detach),
// meta.go (the metadata layer), ingest.go, mirror.go and refuse.go;
// metacache.go for the layer cache, probe.go for Available and the mount
// options, flags.go for nosuid and nodev. overlay_other.go is the stub of
// other systems.
package overlay
