package api

import "time"

// SnapshotRequest is the body of POST /v1/sessions/{id}/snapshots.
type SnapshotRequest struct {
	Label string `json:"label,omitempty"`
}

// Snapshot describes a snapshot.
type Snapshot struct {
	ID        string    `json:"id"`
	Label     string    `json:"label,omitempty"`
	Session   string    `json:"session,omitempty"` // the session it was taken of; "" for imports
	Parent    string    `json:"parent,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Files     int64     `json:"files"`
	Bytes     int64     `json:"bytes"`
	// Manifests is how many directory manifests the snapshot stored: the
	// directories that changed since its parent.
	Manifests int `json:"manifests"`

	// SessionUID is the incarnation of Session it was taken of
	// (Session.UID); "" for imports and for snapshots taken before
	// incarnations existed.
	SessionUID string `json:"session_uid,omitempty"`

	// Daemon is the daemon of the fleet that pushed it, when the fleet's
	// index names it; Remote says the snapshot is in the remote only (not
	// fetched here yet: its files and bytes are the index's).
	Daemon string `json:"daemon,omitempty"`
	Remote bool   `json:"remote,omitempty"`
}

// SnapshotList answers the snapshot list endpoints, newest first.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
	// FleetError, when set, says why the fleet's snapshots are missing
	// from the list (the remote did not answer in time): the list holds
	// this daemon's only.
	FleetError string `json:"fleet_error,omitempty"`
}

// RestoreRequest is the body of POST /v1/sessions/{id}/restore.
type RestoreRequest struct {
	Snapshot string `json:"snapshot"`
}

// Diff is the difference between two states, in path order.
type Diff struct {
	From     string      `json:"from"`
	To       string      `json:"to"`
	Added    int         `json:"added"`
	Modified int         `json:"modified"`
	Deleted  int         `json:"deleted"`
	Entries  []DiffEntry `json:"entries"`
}

// DiffEntry is one path that differs.
type DiffEntry struct {
	Path    string `json:"path"`
	Change  string `json:"change"` // added, modified or deleted
	Kind    string `json:"kind"`   // file, dir, symlink, fifo, socket, chardev or blockdev (before, if deleted)
	OldKind string `json:"old_kind,omitempty"`
	OldSize int64  `json:"old_size,omitempty"`
	NewSize int64  `json:"new_size,omitempty"`
	OldMode uint32 `json:"old_mode,omitempty"` // the 12 permission bits before, setuid/setgid/sticky included (0o644 is 420)
	NewMode uint32 `json:"new_mode,omitempty"` // the 12 permission bits after
	// OldUid, OldGid, NewUid and NewGid are the owner before and after:
	// both sides on a modified entry whose owner changed, the new side on
	// an added entry, the old side on a deleted one (when recorded).
	OldUid *uint32 `json:"old_uid,omitempty"`
	OldGid *uint32 `json:"old_gid,omitempty"`
	NewUid *uint32 `json:"new_uid,omitempty"`
	NewGid *uint32 `json:"new_gid,omitempty"`
	// Xattrs are the extended attributes added, modified or deleted (an
	// added entry lists those it has).
	Xattrs []XattrChange `json:"xattrs,omitempty"`
	// OldRdev and NewRdev are a device's number before and after.
	OldRdev uint64 `json:"old_rdev,omitempty"`
	NewRdev uint64 `json:"new_rdev,omitempty"`
	// LinkTo, on an added name of a hard-linked file, is the name it is a
	// hard link to.
	LinkTo string `json:"link_to,omitempty"`
	// OldTarget and NewTarget are a symlink's target before and after.
	OldTarget string `json:"old_target,omitempty"`
	NewTarget string `json:"new_target,omitempty"`
	// Text is the unified diff of a text file, or of a symlink's target
	// (as git shows a link), when asked for (text=true).
	Text string `json:"text,omitempty"`
	// Binary is set when a text diff was asked for but the content is not
	// text, or too large.
	Binary bool `json:"binary,omitempty"`
}

// XattrChange is one extended attribute of a diff entry that differs.
type XattrChange struct {
	Name   string `json:"name"`
	Change string `json:"change"` // added, modified or deleted
}

// GCReport tells what a garbage collection did.
type GCReport struct {
	Snapshots    int   `json:"snapshots"`
	Sessions     int   `json:"sessions"`
	Marked       int   `json:"marked"`
	Scanned      int   `json:"scanned"`
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	Kept         int   `json:"kept"`
	// Packs is how many manifest packs of deleted snapshots were dropped
	// or rewritten.
	Packs      int     `json:"packs"`
	DurationMs float64 `json:"duration_ms"`
	// ImportCaches is how many host import caches were dropped: with no
	// session left, what they remember is gone from the store.
	ImportCaches int `json:"import_caches,omitempty"`
}

// DeleteSnapshotsResponse answers a snapshot deletion: the snapshots
// deleted (full IDs). Their content is reclaimed by the next
// garbage collection (POST /v1/gc).
type DeleteSnapshotsResponse struct {
	Deleted []string `json:"deleted"`
	// RemoteDeleted are those whose record the daemon's remote held and
	// deleted too; remote garbage collection then reclaims their blobs.
	RemoteDeleted []string `json:"remote_deleted,omitempty"`
}
