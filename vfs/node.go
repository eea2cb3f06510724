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
)

// String returns "file", "dir" or "symlink".
func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "file":
		*k = KindFile
	case "dir":
		*k = KindDir
	case "symlink":
		*k = KindSymlink
	default:
		return fmt.Errorf("unknown node kind %q", b)
	}
	return nil
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

// Node is one entry of a Tree. It is a value: trees share nodes by copying
// them, never by pointer, so a Node obtained from a Tree can be kept freely.
//
// A file's content lives either in the blob store (Blob set, Upper zero) or in
// the session's upper directory (Upper set): files written through handles
// are copied up and live there until a snapshot seals them into blobs.
type Node struct {
	Kind     Kind
	Encoding Encoding
	Mode     fs.FileMode // permission bits only
	Size     int64       // bytes; 0 for directories; len(Target) for symlinks
	Version  uint64      // 1 at creation, +1 per change
	Ino      uint64      // stable identity, kept across renames, copy-up and snapshots
	Created  int64       // creation time, Unix milliseconds UTC
	Updated  int64       // last change, Unix milliseconds UTC
	Blob     Hash        // content in the blob store, for files not in the upper dir
	Upper    uint64      // content in the session's upper dir, when not zero
	Target   string      // symlink target, as given
}

// IsDir reports whether n is a directory.
func (n Node) IsDir() bool { return n.Kind == KindDir }

// IsFile reports whether n is a regular file.
func (n Node) IsFile() bool { return n.Kind == KindFile }

// IsSymlink reports whether n is a symbolic link.
func (n Node) IsSymlink() bool { return n.Kind == KindSymlink }

// CreatedAt returns the creation time in UTC.
func (n Node) CreatedAt() time.Time { return time.UnixMilli(n.Created).UTC() }

// UpdatedAt returns the time of the last change in UTC.
func (n Node) UpdatedAt() time.Time { return time.UnixMilli(n.Updated).UTC() }

// FileMode returns the node's kind and permission bits as an fs.FileMode.
func (n Node) FileMode() fs.FileMode {
	switch n.Kind {
	case KindDir:
		return fs.ModeDir | n.Mode
	case KindSymlink:
		return fs.ModeSymlink | n.Mode
	}
	return n.Mode
}

// DirEntry is one child of a directory, as List returns it.
type DirEntry struct {
	Name string
	Node Node
}

// millis converts t to the engine's timestamp form.
func millis(t time.Time) int64 { return t.UnixMilli() }
