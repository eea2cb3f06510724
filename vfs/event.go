package vfs

import "io/fs"

// Op names a kind of Event. Ops are stable strings: they are what the
// journal stores.
type Op string

// The events a session's tree is folded from.
const (
	OpWrite       Op = "write"       // set a file's whole content to a blob, creating it if needed
	OpMkdir       Op = "mkdir"       // create a directory
	OpSymlink     Op = "symlink"     // create a symbolic link
	OpRemove      Op = "remove"      // remove a node (a directory's subtree only when Recursive)
	OpRename      Op = "rename"      // move a node and its subtree, or exchange two
	OpChmod       Op = "chmod"       // set permission bits
	OpSetTimes    Op = "settimes"    // set the modification time
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
)

// Event is one change to a session. Events carry every input the reducer
// needs — times included — so folding the same events over the same base
// always yields the same Tree. Fields not used by an Op are zero.
type Event struct {
	Op       Op          `json:"op"`
	Path     Path        `json:"path"`
	To       Path        `json:"to,omitempty"`   // rename destination
	Time     int64       `json:"time"`           // Unix ms of the change
	Mode     fs.FileMode `json:"mode,omitempty"` // permission bits; 0 means the default
	Size     int64       `json:"size,omitempty"`
	Blob     Hash        `json:"blob,omitzero"`
	Upper    uint64      `json:"upper,omitempty"`
	Ino      uint64      `json:"ino,omitempty"` // precondition: the node's inode, for copyup and commit
	Encoding Encoding    `json:"encoding,omitempty"`
	Target   string      `json:"target,omitempty"` // symlink target
	Mtime    int64       `json:"mtime,omitempty"`  // settimes: the new modification time, Unix ms

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
}

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
	case OpRestore:
		return []Change{{Path: Root, Subtree: true}}
	case OpRename:
		return []Change{{Path: e.Path, Subtree: true}, {Path: e.To, Subtree: true}}
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
