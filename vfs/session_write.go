package vfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// WriteMode says how WriteFile treats an existing file.
type WriteMode uint8

// Write modes.
const (
	WriteCreate    WriteMode = iota // create the file, or replace its content
	WriteOverwrite                  // replace an existing file's content; not_found otherwise
	WriteCreateNew                  // create a new file; already_exists otherwise
	WriteAppend                     // append to the file, creating it if missing
)

// WriteOptions tune WriteFile.
type WriteOptions struct {
	Mode WriteMode
	// CreateParents creates missing parent directories.
	CreateParents bool
	// ExpectedVersion, when set, makes the write fail with conflict unless
	// the file is at this version (0: unless the file does not exist).
	ExpectedVersion *uint64
	// Perm is the mode of a new file; DefaultFileMode when zero.
	Perm fs.FileMode
	// Owner owns a new file; the session's default owner when nil.
	Owner *Owner
	// Encoding is the content's encoding as the writer declares it, kept
	// with the file (Node.Encoding) through snapshots, forks and restores
	// until the next write: EncodingBinary is kept as given; EncodingUTF8
	// only for content that is UTF-8 — NUL bytes are allowed, text may hold
	// them — and content that is not is refused (invalid_input), changing
	// nothing. For an append it is the whole file's after the append.
	// EncodingUnknown detects it from the content: UTF-8 without NUL is
	// text.
	Encoding Encoding
	// DeferredBlob stores the content without an fsync of its own: it is
	// made durable (the blob store's Sync) by the session's next journal
	// sync, just before the write's journal record can be durable: the
	// background flush (FlushInterval), a durable mutation, or Sync. The
	// overlay mount's ingest, whose upper directory holds the content
	// meanwhile, uses it: one store sync covers many writes.
	DeferredBlob bool
}

// WriteResult reports a WriteFile.
type WriteResult struct {
	Node    Node  // the file after the write
	Created bool  // the write created the file
	Written int64 // bytes of content written (the appended bytes, for append)
}

// maxAppendRetries bounds how often an append retries when a concurrent
// change moved the file's version under it.
const maxAppendRetries = 16

// WriteFile sets the whole content of the file at p, atomically: readers see
// the old content or the new, never a mix. The content goes to the blob
// store first; a failed write changes nothing in the session.
func (s *Session) WriteFile(ctx context.Context, p Path, content io.Reader, opts WriteOptions) (WriteResult, error) {
	const op = "write"
	if err := s.check(op, AccessWrite, p); err != nil {
		return WriteResult{}, err
	}
	if opts.Mode == WriteAppend {
		return s.appendFile(ctx, p, content, opts)
	}
	if err := s.precheckWrite(op, p, opts); err != nil {
		return WriteResult{}, err
	}
	return s.writeContent(ctx, op, p, opts, func() (Hash, int64, Encoding, func(), error) {
		return s.putContentOpts(ctx, content, opts.DeferredBlob, opts.Encoding)
	})
}

// WriteBlob sets the whole content of the file at p to blob h, of size
// bytes and encoding enc, which the caller stored in the session's blob
// store beforehand and keeps pinned until WriteBlob returns: WriteFile
// for content stored ahead, several files at once (the overlay mount's
// ingest). With opts.DeferredBlob the blob may have been stored deferred
// (not yet durable): the session syncs the store before the write's
// record can be durable, as for WriteFile. Append mode is refused.
func (s *Session) WriteBlob(ctx context.Context, p Path, h Hash, size int64, enc Encoding, opts WriteOptions) (WriteResult, error) {
	const op = "write"
	if err := s.check(op, AccessWrite, p); err != nil {
		return WriteResult{}, err
	}
	if opts.Mode == WriteAppend {
		return WriteResult{}, newErr(CodeInvalid, op, p, "WriteBlob sets the whole content; it cannot append")
	}
	return s.writeContent(ctx, op, p, opts, func() (Hash, int64, Encoding, func(), error) {
		return h, size, enc, func() {}, nil
	})
}

// writeContent is WriteFile once checked: put stores the content (or
// names content stored already), and the write event installs it.
func (s *Session) writeContent(ctx context.Context, op string, p Path, opts WriteOptions, put func() (Hash, int64, Encoding, func(), error)) (WriteResult, error) {
	mctx, applied := ctx, func() {}
	if opts.DeferredBlob {
		// The journal's sync waits until the record is appended, then
		// syncs the blob before the record (syncJournal).
		s.deferMu.RLock()
		var once sync.Once
		applied = func() { once.Do(s.deferMu.RUnlock) }
		defer applied()
		mctx = Relaxed(ctx)
	}
	h, size, enc, unpin, err := put()
	if err != nil {
		return WriteResult{}, contentErr(op, p, err)
	}
	defer unpin()
	if opts.DeferredBlob {
		s.deferPending.Store(true)
	}
	_, t, err := s.mutateThen(mctx, op, func(Tree) (*Event, error) {
		return &Event{
			Op: OpWrite, Path: p, Time: s.now(), Blob: h, Size: size, Encoding: enc, Mode: opts.Perm,
			Owner: s.ownerOr(opts.Owner), Parents: opts.CreateParents, Exclusive: opts.Mode == WriteCreateNew,
			MustExist: opts.Mode == WriteOverwrite, IfVersion: opts.ExpectedVersion,
		}, nil
	}, applied)
	if err == nil && opts.DeferredBlob && !isRelaxed(ctx) {
		if err = s.Sync(); err != nil { // durable, as asked: the blob, then the record
			err = ioErr(op, p, err)
		}
	}
	if err != nil {
		return WriteResult{}, err
	}
	n, _ := t.get(p)
	return WriteResult{Node: n, Created: n.Version == 1, Written: size}, nil
}

// precheckWrite fails fast, before any content is stored, on writes the
// reducer would refuse anyway. The reducer still decides.
func (s *Session) precheckWrite(op string, p Path, opts WriteOptions) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return closedErr(op)
	}
	e := Event{Op: OpWrite, Path: p, Time: s.now(), Parents: opts.CreateParents,
		Exclusive: opts.Mode == WriteCreateNew, MustExist: opts.Mode == WriteOverwrite, IfVersion: opts.ExpectedVersion}
	_, err := Reduce(s.tree, &e)
	return withOp(err, op)
}

// appendBaseOnce looks up the file at p and opens its content, for
// appendFile, under s.mu (one attempt: see fetchThen).
func (s *Session) appendBaseOnce(ctx context.Context, op string, p Path, localOnly bool) (n Node, exists bool, content Blob, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Node{}, false, nil, closedErr(op)
	}
	n, exists, err = s.tree.Lookup(p)
	if err != nil {
		return Node{}, false, nil, withOp(err, op)
	}
	if !exists || !n.IsFile() {
		return n, exists, nil, nil
	}
	content, err = s.openSourceLocked(ctx, s.nodeSourceLocked(n), localOnly)
	if err != nil {
		return Node{}, false, nil, ioErr(op, p, err)
	}
	return n, true, content, nil
}

// appendFile appends content to the file at p: it reads the current content,
// stores old+new as one blob and installs it if the file has not changed
// meanwhile, retrying otherwise.
func (s *Session) appendFile(ctx context.Context, p Path, content io.Reader, opts WriteOptions) (WriteResult, error) {
	const op = "append"
	data, err := io.ReadAll(content)
	if err != nil {
		return WriteResult{}, ioErr(op, p, err)
	}
	for range maxAppendRetries {
		var (
			n      Node
			exists bool
			old    Blob
		)
		err := s.fetchThen(ctx, func(localOnly bool) (err error) {
			n, exists, old, err = s.appendBaseOnce(ctx, op, p, localOnly)
			return err
		})
		if err != nil {
			return WriteResult{}, err
		}
		var version uint64
		if exists {
			version = n.Version
		}
		if opts.ExpectedVersion != nil && *opts.ExpectedVersion != version {
			if old != nil {
				old.Close()
			}
			return WriteResult{}, newErr(CodeConflict, op, p, "changed since the expected version; read it again")
		}
		r := io.Reader(bytes.NewReader(data))
		if old != nil {
			r = io.MultiReader(io.NewSectionReader(old, 0, old.Size()), r)
		}
		h, size, enc, unpin, err := s.putContentOpts(ctx, r, false, opts.Encoding)
		if old != nil {
			old.Close()
		}
		if err != nil {
			return WriteResult{}, contentErr(op, p, err)
		}
		_, t, err := s.mutate(ctx, op, func(Tree) (*Event, error) {
			return &Event{Op: OpWrite, Path: p, Time: s.now(), Blob: h, Size: size, Encoding: enc,
				Mode: opts.Perm, Owner: s.ownerOr(opts.Owner), Parents: opts.CreateParents, IfVersion: &version}, nil
		})
		unpin()
		if CodeOf(err) == CodeConflict && opts.ExpectedVersion == nil {
			continue // a concurrent change won; read again
		}
		if err != nil {
			return WriteResult{}, err
		}
		n, _ = t.get(p)
		return WriteResult{Node: n, Created: n.Version == 1, Written: int64(len(data))}, nil
	}
	return WriteResult{}, newErr(CodeConflict, op, p, "kept changing while appending; try again")
}

// putContent stores content in the blob store and reports its encoding.
func (s *Session) putContent(ctx context.Context, content io.Reader) (Hash, int64, Encoding, func(), error) {
	return s.putContentOpts(ctx, content, false, EncodingUnknown)
}

// errNotUTF8 is content declared UTF-8 that is not.
var errNotUTF8 = errors.New("the content is declared utf-8 but is not UTF-8 text; declare it binary, or send UTF-8")

// putContentOpts is putContent, deferring the blob's durability if asked,
// with the writer's declared encoding (WriteOptions.Encoding): errNotUTF8
// for content declared UTF-8 that is not (its blob is stored, unreferenced:
// the collector takes it).
func (s *Session) putContentOpts(ctx context.Context, content io.Reader, deferred bool, declared Encoding) (Hash, int64, Encoding, func(), error) {
	sn := NewSniffer(content)
	if declared == EncodingUTF8 {
		sn = NewTextSniffer(content)
	}
	h, size, unpin, err := s.opts.Blobs.Put(ctx, sn, deferred)
	if err != nil {
		return Hash{}, 0, 0, nil, err
	}
	switch declared {
	case EncodingBinary:
		return h, size, EncodingBinary, unpin, nil
	case EncodingUTF8:
		if !sn.ValidUTF8() {
			unpin()
			return Hash{}, 0, 0, nil, errNotUTF8
		}
		return h, size, EncodingUTF8, unpin, nil
	}
	return h, size, sn.Encoding(), unpin, nil
}

// contentErr is a failure to store a write's content: invalid_input for
// content that contradicts its declared encoding, an I/O error otherwise.
func contentErr(op string, p Path, err error) error {
	if errors.Is(err, errNotUTF8) {
		return newErr(CodeInvalid, op, p, errNotUTF8.Error())
	}
	return ioErr(op, p, err)
}

// MkdirOptions tune Mkdir.
type MkdirOptions struct {
	Perm    fs.FileMode // DefaultDirMode when zero, unless ExactPerm
	Parents bool        // create missing parents; an existing directory is fine
	// ExactPerm takes Perm as given, 0 included, as mkdir(2) does.
	ExactPerm bool
	// Owner owns the new directories; the session's default owner when nil.
	Owner *Owner
}

// Mkdir creates the directory p.
func (s *Session) Mkdir(ctx context.Context, p Path, opts MkdirOptions) (Node, error) {
	const op = "mkdir"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	_, t, err := s.mutate(ctx, op, func(t Tree) (*Event, error) {
		if n, ok := t.get(p); ok && n.IsDir() && opts.Parents {
			return nil, nil // already there: nothing to journal
		}
		return &Event{Op: OpMkdir, Path: p, Time: s.now(), Mode: opts.Perm, ExactMode: opts.ExactPerm,
			Owner: s.ownerOr(opts.Owner), Parents: opts.Parents}, nil
	})
	if err != nil {
		return Node{}, err
	}
	n, _ := t.get(p)
	return n, nil
}

// RemoveOptions tune Remove.
type RemoveOptions struct {
	// Recursive removes a directory with everything in it; without it a
	// directory must be empty.
	Recursive bool
	// Kind, when set, requires the node to be of this kind (is_directory or
	// not_directory otherwise), like unlink(2) and rmdir(2).
	Kind Kind
}

// Remove deletes the node at p.
func (s *Session) Remove(ctx context.Context, p Path, opts RemoveOptions) error {
	const op = "remove"
	if err := s.check(op, AccessWrite, p); err != nil {
		return err
	}
	_, _, err := s.mutate(ctx, op, func(Tree) (*Event, error) {
		return &Event{Op: OpRemove, Path: p, Time: s.now(), Recursive: opts.Recursive, WantKind: opts.Kind}, nil
	})
	return err
}

// RenameOptions tune Rename.
type RenameOptions struct {
	NoReplace     bool // fail with already_exists if the destination exists, even as the source itself or another name of its node
	Exchange      bool // swap the two paths, which must both exist
	CreateParents bool // create the destination's missing parents
}

// Rename moves the node at from, with everything beneath it, to to. An
// existing destination is replaced if it is a file (by a file) or an empty
// directory (by a directory), as rename(2) does. Nothing is copied.
func (s *Session) Rename(ctx context.Context, from, to Path, opts RenameOptions) error {
	const op = "rename"
	for _, p := range []Path{from, to} {
		if err := s.check(op, AccessWrite, p); err != nil {
			return err
		}
	}
	_, _, err := s.mutate(ctx, op, func(t Tree) (*Event, error) {
		if opts.NoReplace && !opts.Exchange && renamesOntoItself(t, from, to) {
			return nil, newErr(CodeExists, op, to, "already exists")
		}
		return &Event{Op: OpRename, Path: from, To: to, Time: s.now(),
			NoReplace: opts.NoReplace, Exchange: opts.Exchange, Parents: opts.CreateParents}, nil
	})
	return err
}

// renamesOntoItself reports whether renaming from to to would be one of the
// renames the reducer treats as nothing to do: onto the same path, or onto
// another name of the same node. With NoReplace they must fail instead, as
// renameat2(RENAME_NOREPLACE) does, since the destination exists. Session
// checks this before journaling rather than the reducer, so journals
// holding such a no-op from before still replay.
func renamesOntoItself(t Tree, from, to Path) bool {
	if from.IsRoot() || to.IsRoot() {
		return false // the reducer refuses these (invalid_input)
	}
	src, ok := t.get(from)
	if !ok {
		return false
	}
	if from == to {
		return true
	}
	dst, ok := t.get(to)
	return ok && !src.IsDir() && dst.Ino == src.Ino
}

// Symlink creates a symbolic link at p pointing to target. The target is
// stored as given; the session never follows it on its own.
func (s *Session) Symlink(ctx context.Context, target string, p Path) (Node, error) {
	return s.SymlinkAs(ctx, target, p, nil)
}

// SymlinkAs is Symlink with the link's owner (the session's default owner
// when nil).
func (s *Session) SymlinkAs(ctx context.Context, target string, p Path, owner *Owner) (Node, error) {
	const op = "symlink"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	switch {
	case target == "":
		return Node{}, newErr(CodeInvalid, op, p, "symlink target is empty")
	case len(target) > MaxPathBytes:
		return Node{}, newErr(CodeInvalid, op, p, "symlink target is longer than 4095 bytes")
	case strings.IndexByte(target, 0) >= 0:
		return Node{}, newErr(CodeInvalid, op, p, "symlink target contains a NUL byte")
	case !utf8.ValidString(target):
		return Node{}, newErr(CodeInvalid, op, p, "symlink target is not valid UTF-8")
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpSymlink, Path: p, Target: target, Owner: s.ownerOr(owner)})
}

// Chmod sets the mode bits of the node at p: the permission bits and
// setuid, setgid and sticky (fs.ModeSetuid, fs.ModeSetgid, fs.ModeSticky;
// see ModeFromUnix); other bits are ignored. The change time moves; the
// modification time does not.
func (s *Session) Chmod(ctx context.Context, p Path, mode fs.FileMode) (Node, error) {
	const op = "chmod"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpChmod, Path: p, Mode: mode & PermBits})
}

// Chown sets the owner and group of the node at p (a symlink itself, as
// lchown(2)); NoOwner leaves one unchanged. The change time moves even when
// nothing else does. As on Linux, a change of a non-directory's owner
// drops its setuid bit, and its setgid bit when it is group-executable.
// Whether the caller may do this is the caller's business (the mount
// checks, the engine does not).
func (s *Session) Chown(ctx context.Context, p Path, uid, gid uint32) (Node, error) {
	const op = "chown"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpChown, Path: p, Owner: &Owner{Uid: uid, Gid: gid}})
}

// SetTimes sets the modification time of the node at p (to the
// nanosecond); the change time moves to now.
func (s *Session) SetTimes(ctx context.Context, p Path, mtime time.Time) (Node, error) {
	return s.Utimens(ctx, p, UtimeOmit, At(mtime))
}

// TimeSpec is one time for Utimens: left alone (UtimeOmit, the zero
// value), set to the current time (UtimeNow), or set to a given time (At).
type TimeSpec struct {
	set, now bool
	t        time.Time
}

// Time specs for Utimens.
var (
	UtimeOmit = TimeSpec{}
	UtimeNow  = TimeSpec{set: true, now: true}
)

// At is a TimeSpec setting t.
func At(t time.Time) TimeSpec { return TimeSpec{set: true, t: t} }

// Utimens sets the access and modification times of the node at p, as
// utimensat(2): each is left alone (UtimeOmit), set to now (UtimeNow) or
// set to a given time, to the nanosecond. The change time moves to now
// unless both are omitted, in which case nothing changes.
func (s *Session) Utimens(ctx context.Context, p Path, atime, mtime TimeSpec) (Node, error) {
	const op = "settimes"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	if !atime.set && !mtime.set {
		return s.Stat(ctx, p)
	}
	resolve := func(ts TimeSpec) *int64 {
		if !ts.set || ts.now {
			return nil
		}
		v := ts.t.UnixNano()
		return &v
	}
	e := &Event{Op: OpSetTimes, Path: p, Times: &Times{
		Atime: resolve(atime), Mtime: resolve(mtime), AtimeNow: atime.now, MtimeNow: mtime.now}}
	// Writes through an open handle not committed yet would otherwise be
	// committed after these times and move mtime again (tar writes a
	// file, sets its times through the descriptor, then closes it): they
	// go first, in the same journal record.
	origin := OriginOf(ctx)
	e.Origin = origin
	s.mu.Lock()
	e.Time = s.now()
	var (
		seq  uint64
		done *Event
		err  error
	)
	if n, ok := s.tree.get(p); ok && n.Upper != 0 && s.uppers[n.Upper] != nil {
		seq, done, err = s.commitUpperWithLocked(op, p, n.Ino, s.uppers[n.Upper], origin, e)
	} else {
		done = e
		seq, err = s.applyLocked(op, e)
	}
	t := s.tree
	s.mu.Unlock()
	if err != nil {
		return Node{}, err
	}
	if err := s.commit(ctx, seq, done); err != nil {
		return Node{}, err
	}
	n, _ := t.get(p)
	return n, nil
}

// CreateOptions describe a node to create with POSIX semantics: Perm is
// taken as given (0 is 0; PermBits count), and Owner owns it (the session's
// default owner when nil). A setgid parent directory gives its group.
type CreateOptions struct {
	Perm  fs.FileMode
	Owner *Owner
}

// Mknod creates a fifo, socket, or character or block device (rdev names
// the device) at p. The parent must exist.
func (s *Session) Mknod(ctx context.Context, p Path, kind Kind, opts CreateOptions, rdev uint64) (Node, error) {
	const op = "mknod"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpMknod, Path: p, Kind: kind, Rdev: rdev,
		Mode: opts.Perm & PermBits, ExactMode: true, Owner: s.ownerOr(opts.Owner)})
}

// Link gives the node at existing the new name p, as link(2): both names
// share one node from then on (content, mode, owner, times, extended
// attributes), whichever name a change goes through. Directories cannot be
// linked (not_permitted); p must not exist (already_exists). It returns
// the node, whose Nlink has grown.
func (s *Session) Link(ctx context.Context, existing, p Path) (Node, error) {
	const op = "link"
	for _, q := range []Path{existing, p} {
		if err := s.check(op, AccessWrite, q); err != nil {
			return Node{}, err
		}
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpLink, Path: existing, To: p})
}

// SetXattr sets the extended attribute name of the node at p to value,
// as setxattr(2): XattrCreate fails with already_exists if it is set,
// XattrReplace with no_data if it is not. Values above 64 KiB, names above
// 255 bytes (too_large) and more than 256 KiB per node (no_space) are
// refused. The change time moves.
func (s *Session) SetXattr(ctx context.Context, p Path, name string, value []byte, flags XattrFlags) (Node, error) {
	const op = "setxattr"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	v := append([]byte{}, value...)
	return s.mutateNode(ctx, op, p, &Event{Op: OpSetXattr, Path: p, Name: name, Value: v, XattrFlags: flags})
}

// RemoveXattr removes the extended attribute name of the node at p; no_data
// if it is not set. The change time moves.
func (s *Session) RemoveXattr(ctx context.Context, p Path, name string) (Node, error) {
	const op = "removexattr"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	return s.mutateNode(ctx, op, p, &Event{Op: OpRemoveXattr, Path: p, Name: name})
}

// GetXattr returns the value of the extended attribute name of the node at
// p; no_data if it is not set.
func (s *Session) GetXattr(ctx context.Context, p Path, name string) ([]byte, error) {
	n, err := s.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	v, ok := n.Xattrs.Get(name)
	if !ok {
		return nil, newErr(CodeNoData, "getxattr", p, "no extended attribute "+name)
	}
	return v, nil
}

// ListXattr returns the names of the extended attributes of the node at p,
// sorted.
func (s *Session) ListXattr(ctx context.Context, p Path) ([]string, error) {
	n, err := s.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	return n.Xattrs.Names(), nil
}

// mutateNode applies e, stamped with the current time, and returns the
// node at p afterwards.
func (s *Session) mutateNode(ctx context.Context, op string, p Path, e *Event) (Node, error) {
	_, t, err := s.mutate(ctx, op, func(Tree) (*Event, error) {
		e.Time = s.now()
		return e, nil
	})
	if err != nil {
		return Node{}, err
	}
	n, _ := t.get(p)
	return n, nil
}

// Truncate sets the size of the file at p, cutting it or extending it with
// zeros. Truncating to zero stores nothing; other sizes copy the file up.
func (s *Session) Truncate(ctx context.Context, p Path, size int64) (Node, error) {
	const op = "truncate"
	if err := s.check(op, AccessWrite, p); err != nil {
		return Node{}, err
	}
	if size < 0 {
		return Node{}, newErr(CodeInvalid, op, p, "size must not be negative")
	}
	if err := checkFileSize(op, p, size); err != nil {
		return Node{}, err
	}
	if size == 0 {
		return s.mutateNode(ctx, op, p, &Event{Op: OpWrite, Path: p, Blob: EmptyHash, Encoding: EncodingUTF8, MustExist: true})
	}
	h, err := s.OpenFile(ctx, p, os.O_WRONLY, 0)
	if err != nil {
		return Node{}, err
	}
	if err := h.Truncate(size); err != nil {
		h.Close()
		return Node{}, err
	}
	n, err := h.Stat()
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return n, err
}
