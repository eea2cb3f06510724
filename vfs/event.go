package vfs

import "io/fs"

// Op names a kind of Event. Ops are stable strings: they are what the
// journal stores.
type Op string

// The events a session's tree is folded from.
const (
	OpWrite       Op = "write"       // set a file's whole content to a blob (or an empty upper file), creating it if needed
	OpMkdir       Op = "mkdir"       // create a directory
	OpSymlink     Op = "symlink"     // create a symbolic link
	OpRemove      Op = "remove"      // remove a node (a directory's subtree only when Recursive)
	OpRename      Op = "rename"      // move a node and its subtree, or exchange two
	OpChmod       Op = "chmod"       // set permission bits (setuid, setgid, sticky included)
	OpSetTimes    Op = "settimes"    // set the access and/or modification time
	OpChown       Op = "chown"       // set the owner and/or group
	OpMknod       Op = "mknod"       // create a fifo, socket or device node
	OpLink        Op = "link"        // give the node at Path a new name, To (a hard link)
	OpSetXattr    Op = "setxattr"    // set an extended attribute
	OpRemoveXattr Op = "removexattr" // remove an extended attribute
	OpCopyUp      Op = "copyup"      // a file's content moved into the upper dir, unchanged
	OpCommit      Op = "commit"      // a copied-up file's content changed through a handle
	OpSeal        Op = "seal"        // copied-up files sealed into blobs, content unchanged
	OpSnapshotted Op = "snapshotted" // a snapshot of the session was recorded
	// OpRestore replaces the whole tree with snapshot Snapshot's. The session
	// applies it (Reduce cannot: it needs the snapshot's tree), and sends it
	// to subscribers after Reset and restores.
	OpRestore Op = "restore"
	// OpBatch applies the events in Batch in order, all or none: the
	// journal record of a multi-path tool call.
	OpBatch Op = "batch"
	// OpRewind replaces the whole tree with the session's own tree as it
	// was just after event Seq (every later event undone), with the
	// content of files then in upper files taken from Seals. Like
	// OpRestore the session applies it (from its history), and mounts
	// treat it as a restore.
	OpRewind Op = "rewind"
)

// Event is one change to a session. Events carry every input the reducer
// needs — times included — so folding the same events over the same base
// always yields the same Tree. Fields not used by an Op are zero.
type Event struct {
	Op   Op          `json:"op"`
	Path Path        `json:"path"`
	To   Path        `json:"to,omitempty"`   // rename destination
	Time int64       `json:"time"`           // Unix ms of the change
	Mode fs.FileMode `json:"mode,omitempty"` // permission bits; 0 means the default
	Size int64       `json:"size,omitempty"`
	Blob Hash        `json:"blob,omitzero"`
	// Upper is the upper file of copyup and commit, and of a write that
	// creates or empties a file straight into a new, empty upper file
	// (Blob is then EmptyHash, what a reader that ignores Upper takes).
	Upper    uint64   `json:"upper,omitempty"`
	Ino      uint64   `json:"ino,omitempty"` // precondition: the node's inode, for copyup and commit
	Encoding Encoding `json:"encoding,omitempty"`
	Target   string   `json:"target,omitempty"` // symlink target
	Mtime    int64    `json:"mtime,omitempty"`  // settimes of format-1 events: the new modification time, Unix ms

	// V is the event format: 0 for events journaled before owners, links
	// and nanosecond times (their chmod also set the modification time), 2
	// since. The session stamps it.
	V  int   `json:"v,omitempty"`
	Ns int64 `json:"ns,omitempty"` // the nanoseconds of Time past its millisecond

	// ExactMode makes Mode taken as given, 0 included; without it a zero
	// Mode means the default.
	ExactMode bool `json:"exact_mode,omitempty"`
	// Owner is the owner of a node created by the event (nil: not
	// recorded) or, for chown, the new owner (NoOwner: unchanged).
	Owner *Owner `json:"owner,omitempty"`
	// Times are settimes' new times, Unix ns; a nil one is left alone.
	Times *Times `json:"times,omitempty"`
	Kind  Kind   `json:"kind,omitempty"` // mknod: the kind of node
	Rdev  uint64 `json:"rdev,omitempty"` // mknod: a device's number
	// Name, Value and XattrFlags are the extended attribute of setxattr
	// and removexattr.
	Name       string     `json:"name,omitempty"`
	Value      []byte     `json:"value,omitempty"`
	XattrFlags XattrFlags `json:"xattr_flags,omitempty"`

	// IfVersion, when set, makes a write conditional on the file's current
	// version; 0 means the file must not exist.
	IfVersion *uint64 `json:"if_version,omitempty"`

	Parents   bool `json:"parents,omitempty"`    // create missing parent directories
	Recursive bool `json:"recursive,omitempty"`  // remove a directory with its contents
	Exclusive bool `json:"exclusive,omitempty"`  // write: fail if the file exists
	MustExist bool `json:"must_exist,omitempty"` // write: fail if the file does not exist
	NoReplace bool `json:"no_replace,omitempty"` // rename: fail if the destination exists
	Exchange  bool `json:"exchange,omitempty"`   // rename: swap source and destination
	WantKind  Kind `json:"want_kind,omitempty"`  // remove: only a node of this kind

	Seals    []Seal  `json:"seals,omitempty"`
	Snapshot string  `json:"snapshot,omitempty"` // snapshotted, restore: the snapshot's ID
	Initial  bool    `json:"initial,omitempty"`  // restore: the snapshot is also the state Reset returns to
	Seq      uint64  `json:"seq,omitempty"`      // snapshotted: the last event the snapshot includes
	Batch    []Event `json:"batch,omitempty"`    // batch: the events, applied in order

	// Origin is the origin (WithOrigin) of the context the change was made
	// under, e.g. a FUSE or overlay mount's: the history tells the changes
	// of tool calls from those of programs in a mount by it. "" when not
	// known. The reducer ignores it.
	Origin string `json:"origin,omitempty"`
}

// Times are the new times of a settimes event, in Unix nanoseconds; a nil
// field is not changed.
type Times struct {
	Atime *int64 `json:"atime,omitempty"`
	Mtime *int64 `json:"mtime,omitempty"`
	// AtimeNow and MtimeNow set a time to the event's own (UTIME_NOW).
	AtimeNow bool `json:"atime_now,omitempty"`
	MtimeNow bool `json:"mtime_now,omitempty"`
}

// eventFormat is the V the session stamps on new events.
const eventFormat = 2

// nanos returns the event's time in Unix nanoseconds.
func (e *Event) nanos() int64 { return e.Time*1e6 + e.Ns }

// Seal records that a copied-up file's content now also lives in a blob.
type Seal struct {
	Path     Path     `json:"path"`
	Ino      uint64   `json:"ino"`
	Upper    uint64   `json:"upper"`
	Blob     Hash     `json:"blob"`
	Encoding Encoding `json:"encoding,omitempty"`
}

// Change names what an event touched: a node, or a node and everything
// beneath it. Snapshots use changes to find what to re-hash; the FUSE mount
// uses them to invalidate kernel caches.
type Change struct {
	Path    Path
	Subtree bool
}

// Changes lists what e touches. Parents created along the way are ancestors
// of a listed path, so they are covered.
func (e *Event) Changes() []Change {
	switch e.Op {
	case OpSeal, OpSnapshotted:
		return nil
	case OpRestore, OpRewind:
		return []Change{{Path: Root, Subtree: true}}
	case OpRename:
		return []Change{{Path: e.Path, Subtree: true}, {Path: e.To, Subtree: true}}
	case OpLink:
		return []Change{{Path: e.Path}, {Path: e.To}}
	case OpRemove:
		return []Change{{Path: e.Path, Subtree: e.Recursive}}
	case OpBatch:
		var cs []Change
		for i := range e.Batch {
			cs = append(cs, e.Batch[i].Changes()...)
		}
		return cs
	}
	return []Change{{Path: e.Path}}
}
