package vfs

import (
	"fmt"
	"io/fs"
	"time"
)

// Kind is what a node is.
type Kind uint8

// Node kinds.
const (
	KindFile Kind = iota + 1
	KindDir
	KindSymlink
	KindFifo     // a named pipe (mkfifo)
	KindSocket   // a Unix domain socket's name (bind)
	KindCharDev  // a character device; Node.Rdev names it
	KindBlockDev // a block device; Node.Rdev names it

	maxKind = KindBlockDev
)

var kindNames = [...]string{KindFile: "file", KindDir: "dir", KindSymlink: "symlink",
	KindFifo: "fifo", KindSocket: "socket", KindCharDev: "chardev", KindBlockDev: "blockdev"}

// String returns "file", "dir", "symlink", "fifo", "socket", "chardev" or
// "blockdev".
func (k Kind) String() string {
	if k >= KindFile && k <= maxKind {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsSpecial reports whether k is a fifo, socket or device: a node with no
// content of its own.
func (k Kind) IsSpecial() bool { return k >= KindFifo && k <= maxKind }

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, name := range kindNames {
		if name != "" && name == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown node kind %q", b)
}

// Encoding is a hint about a file's content, recorded when the engine sees
// the content whole (tool writes, snapshots) and Unknown otherwise.
type Encoding uint8

// Encoding hints.
const (
	EncodingUnknown Encoding = iota
	EncodingUTF8
	EncodingBinary
)

// String returns "utf-8", "binary" or "unknown".
func (e Encoding) String() string {
	switch e {
	case EncodingUTF8:
		return "utf-8"
	case EncodingBinary:
		return "binary"
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (e Encoding) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (e *Encoding) UnmarshalText(b []byte) error {
	switch string(b) {
	case "utf-8":
		*e = EncodingUTF8
	case "binary":
		*e = EncodingBinary
	case "unknown", "":
		*e = EncodingUnknown
	default:
		return fmt.Errorf("unknown encoding %q", b)
	}
	return nil
}

// Default permission bits for new nodes.
const (
	DefaultFileMode fs.FileMode = 0o644
	DefaultDirMode  fs.FileMode = 0o755
	SymlinkMode     fs.FileMode = 0o777
)

// PermBits are the mode bits a node keeps: the nine permission bits and
// setuid, setgid and sticky (Go's fs.ModeSetuid, fs.ModeSetgid and
// fs.ModeSticky, which UnixMode and ModeFromUnix translate to 0o4000,
// 0o2000 and 0o1000).
const PermBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// ModeFromUnix turns the low twelve bits of a Unix mode (as chmod(2) takes
// it) into the engine's form. File type bits are ignored.
func ModeFromUnix(m uint32) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// unixPerm returns the twelve Unix permission bits of m.
func unixPerm(m fs.FileMode) uint32 {
	u := uint32(m & fs.ModePerm)
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// NoOwner, as a Uid or Gid, means "not recorded": nodes read from stores
// and journals written before owners existed carry it, and a Tree reports
// such nodes with its default owner (see Tree.WithOwner). In Chown it
// means "leave unchanged", as -1 does for chown(2).
const NoOwner = ^uint32(0)

// Owner is a user and group ID pair.
type Owner struct {
	Uid uint32 `json:"uid"`
	Gid uint32 `json:"gid"`
}

// Node is one entry of a Tree. It is a value: trees share nodes by copying
// them, never by pointer, so a Node obtained from a Tree can be kept freely.
//
// A file's content lives either in the blob store (Blob set, Upper zero) or in
// the session's upper directory (Upper set): files written through handles
// are copied up and live there until a snapshot seals them into blobs.
//
// Several paths may name the same node (hard links): they share Ino and
// everything else; Nlink counts them. A directory's Nlink is 2 plus its
// subdirectories.
type Node struct {
	Kind     Kind
	Encoding Encoding
	Mode     fs.FileMode // PermBits only: permissions, setuid, setgid, sticky
	Uid      uint32      // owner; NoOwner when not recorded
	Gid      uint32      // group; NoOwner when not recorded
	Nlink    uint32      // names of a non-directory; 2 + subdirectories for a directory
	Size     int64       // bytes; 0 for directories; len(Target) for symlinks
	Version  uint64      // 1 at creation, +1 per change
	Ino      uint64      // stable identity, kept across renames, copy-up and snapshots
	Atime    int64       // last access set (the engine does not update it on reads), Unix ns
	Mtime    int64       // last content change, Unix ns
	Ctime    int64       // last content or metadata change, Unix ns, never set by callers
	Btime    int64       // birth (creation) time, Unix ns
	Created  int64       // Btime in Unix milliseconds (for tool receipts)
	Updated  int64       // Mtime in Unix milliseconds (for tool receipts)
	Blob     Hash        // content in the blob store, for files not in the upper dir
	Upper    uint64      // content in the session's upper dir, when not zero
	Target   string      // symlink target, as given
	Rdev     uint64      // device number of a character or block device
	Xattrs   Xattrs      // extended attributes

	link bool // in a Tree's path map: a hard-linked name, the node is in the inode map
	lazy bool // in a Tree's path map: a lazy directory, its manifest hash in Blob (see lazy.go)
}

// IsDir reports whether n is a directory.
func (n Node) IsDir() bool { return n.Kind == KindDir }

// IsFile reports whether n is a regular file.
func (n Node) IsFile() bool { return n.Kind == KindFile }

// IsSymlink reports whether n is a symbolic link.
func (n Node) IsSymlink() bool { return n.Kind == KindSymlink }

// IsSpecial reports whether n is a fifo, socket or device node.
func (n Node) IsSpecial() bool { return n.Kind.IsSpecial() }

// CreatedAt returns the creation (birth) time in UTC.
func (n Node) CreatedAt() time.Time { return time.Unix(0, n.Btime).UTC() }

// UpdatedAt returns the modification time in UTC.
func (n Node) UpdatedAt() time.Time { return time.Unix(0, n.Mtime).UTC() }

// AccessedAt returns the access time in UTC.
func (n Node) AccessedAt() time.Time { return time.Unix(0, n.Atime).UTC() }

// ChangedAt returns the status change time in UTC.
func (n Node) ChangedAt() time.Time { return time.Unix(0, n.Ctime).UTC() }

// HasOwner reports whether n's owner is recorded (not NoOwner).
func (n Node) HasOwner() bool { return n.Uid != NoOwner && n.Gid != NoOwner }

// FileMode returns the node's kind and mode bits as an fs.FileMode.
func (n Node) FileMode() fs.FileMode {
	switch n.Kind {
	case KindDir:
		return fs.ModeDir | n.Mode
	case KindSymlink:
		return fs.ModeSymlink | n.Mode
	case KindFifo:
		return fs.ModeNamedPipe | n.Mode
	case KindSocket:
		return fs.ModeSocket | n.Mode
	case KindCharDev:
		return fs.ModeDevice | fs.ModeCharDevice | n.Mode
	case KindBlockDev:
		return fs.ModeDevice | n.Mode
	}
	return n.Mode
}

// KindFromFileMode returns the kind an fs.FileMode's type bits name (the
// inverse of Node.FileMode: a plain mode is a file), or 0, no kind, for a
// type no node has (fs.ModeIrregular).
func KindFromFileMode(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	case m&fs.ModeNamedPipe != 0:
		return KindFifo
	case m&fs.ModeSocket != 0:
		return KindSocket
	case m&fs.ModeCharDevice != 0:
		return KindCharDev
	case m&fs.ModeDevice != 0:
		return KindBlockDev
	}
	return 0
}

// unixTypes are each kind's file type bits in a stat(2) mode (S_IFREG,
// S_IFDIR, ...: the same on Linux, macOS and the BSDs), within unixTypeMask
// (S_IFMT).
var unixTypes = [...]uint32{KindFile: 0o100000, KindDir: 0o040000, KindSymlink: 0o120000,
	KindFifo: 0o010000, KindSocket: 0o140000, KindCharDev: 0o020000, KindBlockDev: 0o060000}

const unixTypeMask = 0o170000

// UnixMode returns the node's mode as stat(2) reports it: the file type
// (S_IFREG, S_IFDIR, ...) and the twelve permission bits.
func (n Node) UnixMode() uint32 {
	var t uint32
	if n.Kind >= KindFile && n.Kind <= maxKind {
		t = unixTypes[n.Kind]
	}
	return t | unixPerm(n.Mode)
}

// KindFromUnix returns the kind a stat(2) mode's file type bits name (the
// inverse of UnixMode's), or 0, no kind, when they name none. Permission
// bits are ignored.
func KindFromUnix(m uint32) Kind {
	t := m & unixTypeMask
	for k := KindFile; k <= maxKind; k++ {
		if unixTypes[k] == t {
			return k
		}
	}
	return 0
}

// setMtime sets the modification time (and its millisecond mirror).
func (n *Node) setMtime(ns int64) {
	n.Mtime = ns
	n.Updated = floorDiv(ns, 1e6)
}

// setBtime sets the birth time (and its millisecond mirror).
func (n *Node) setBtime(ns int64) {
	n.Btime = ns
	n.Created = floorDiv(ns, 1e6)
}

// stamp gives a new node all four times.
func (n *Node) stamp(ns int64) {
	n.setBtime(ns)
	n.setMtime(ns)
	n.Atime, n.Ctime = ns, ns
}

// modified records a content change at ns: mtime and ctime.
func (n *Node) modified(ns int64) {
	n.setMtime(ns)
	n.Ctime = ns
}

// Normalize fills in what a node built by older code (or outside the
// engine) may lack: nanosecond times from the millisecond Created and
// Updated when they are zero, the millisecond mirrors from the nanosecond
// times otherwise, and a link count of 1 for a non-directory. TreeBuilder
// calls it on every node it is given.
func (n Node) Normalize() Node {
	if n.Btime == 0 && n.Created != 0 {
		n.Btime = n.Created * 1e6
	}
	if n.Mtime == 0 && n.Updated != 0 {
		n.Mtime = n.Updated * 1e6
	}
	if n.Ctime == 0 {
		n.Ctime = n.Mtime
	}
	if n.Atime == 0 {
		n.Atime = n.Mtime
	}
	n.Created, n.Updated = floorDiv(n.Btime, 1e6), floorDiv(n.Mtime, 1e6)
	if n.Kind != KindDir && n.Nlink == 0 {
		n.Nlink = 1
	}
	n.Mode &= PermBits
	return n
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// DirEntry is one child of a directory, as List returns it.
type DirEntry struct {
	Name string
	Node Node
}

// millis converts t to the engine's millisecond timestamp form.
func millis(t time.Time) int64 { return t.UnixMilli() }
