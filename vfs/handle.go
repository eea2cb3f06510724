package vfs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
)

// Handle is an open file of a session, for random-access reads and writes —
// what the FUSE mount holds per open(2). A read-only handle never copies
// anything; the first write copies the file up into the session's upper
// directory, and later writes go straight to that file.
//
// A handle follows its file across renames. When the file is removed or
// replaced, the handle is detached, as a POSIX descriptor of an unlinked
// file: it keeps reading and writing the content it had, and nobody else
// sees those writes.
//
// Writes become session events when committed: by Flush, Sync, Close and
// Truncate, and by snapshots. Stat and session reads see uncommitted writes.
type Handle struct {
	s       *Session
	flags   int
	relaxed bool
	origin  string // the opener's origin (WithOrigin), for notices

	// Guarded by s.mu.
	path       Path
	ino        uint64
	closed     bool
	detached   bool
	orphan     *upperFile // a detached handle's content, when in an upper file
	orphanBlob Hash       // a detached handle's content, when in a blob
	orphanSize int64
	orphanNode Node // the node as it was when detached
}

// OpenFile opens the file at p with os.OpenFile flags (O_RDONLY, O_WRONLY,
// O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND). New files get perm (the
// default file mode when zero). Opening never copies content.
func (s *Session) OpenFile(ctx context.Context, p Path, flag int, perm fs.FileMode) (*Handle, error) {
	if perm == 0 {
		perm = DefaultFileMode
	}
	return s.OpenFileWith(ctx, p, flag, CreateOptions{Perm: perm})
}

// OpenFileWith is OpenFile creating a new file as opts says, with POSIX
// semantics: the mode is taken as given, 0 included, and the owner is
// opts.Owner (the session's default owner when nil).
func (s *Session) OpenFileWith(ctx context.Context, p Path, flag int, opts CreateOptions) (*Handle, error) {
	const op = "open"
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	access := AccessRead
	if write || flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		access = AccessWrite
	}
	if err := s.check(op, access, p); err != nil {
		return nil, err
	}
	// A file this open creates or empties for writing gets its new,
	// empty upper file now, in the event that creates or empties it: its
	// first write then needs no copy-up event of its own. The file is
	// made before the lock is taken, and dropped if the open turns out
	// not to need it.
	var nuf *upperFile
	if write && s.emptiesOnOpen(p, flag) {
		var err error
		if nuf, err = s.newUpper(); err != nil {
			return nil, ioErr(op, p, err)
		}
		defer func() { nuf.discard() }() // unless registered (then nil)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, closedErr(op)
	}
	n, exists, err := s.tree.Lookup(p)
	var e *Event
	switch {
	case err != nil:
		s.mu.Unlock()
		return nil, withOp(err, op)
	case exists && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		s.mu.Unlock()
		return nil, newErr(CodeExists, op, p, "already exists")
	case exists && n.IsDir():
		s.mu.Unlock()
		return nil, newErr(CodeIsDir, op, p, "is a directory")
	case exists && n.IsSymlink():
		s.mu.Unlock()
		return nil, newErr(CodeInvalid, op, p, "is a symlink; open its target instead")
	case exists && n.IsSpecial():
		s.mu.Unlock()
		return nil, newErr(CodeInvalid, op, p, fmt.Sprintf("is a %s, which has no content in the session", n.Kind))
	case !exists && flag&os.O_CREATE == 0:
		err := missingErr(s.tree, op, p)
		s.mu.Unlock()
		return nil, err
	case !exists:
		e = &Event{Op: OpWrite, Path: p, Time: s.now(), Blob: EmptyHash, Encoding: EncodingUTF8,
			Mode: opts.Perm & PermBits, ExactMode: true, Owner: s.ownerOr(opts.Owner), Exclusive: true}
		if nuf != nil {
			e.Upper = nuf.id
		}
	case flag&os.O_TRUNC != 0 && (n.Size != 0 || n.Upper != 0):
		e = &Event{Op: OpWrite, Path: p, Time: s.now(), Blob: EmptyHash, Encoding: EncodingUTF8, MustExist: true}
		if nuf != nil {
			e.Upper = nuf.id
		}
	}
	var seq uint64
	if e != nil {
		var err error
		e.Origin = OriginOf(ctx)
		if seq, err = s.applyLocked(op, e); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if e.Upper != 0 {
			s.registerLocked(nuf)
			nuf = nil
		}
		n, _ = s.tree.get(p)
	}
	h := &Handle{s: s, flags: flag, relaxed: isRelaxed(ctx), origin: OriginOf(ctx), path: p, ino: n.Ino}
	s.handles[n.Ino] = append(s.handles[n.Ino], h)
	s.mu.Unlock()
	if e != nil {
		if err := s.commit(ctx, seq, e); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Path returns the handle's current path (it follows renames). For a
// detached handle, it is the path the file had.
func (h *Handle) Path() Path {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	return h.path
}

// Ino returns the inode of the file the handle was opened on.
func (h *Handle) Ino() uint64 { return h.ino }

// Detached reports whether the handle's file was removed or replaced.
func (h *Handle) Detached() bool {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	return h.detached
}

func (h *Handle) ctx() context.Context {
	ctx := WithOrigin(context.Background(), h.origin)
	if h.relaxed {
		return Relaxed(ctx)
	}
	return ctx
}

func (h *Handle) writable() bool { return h.flags&(os.O_WRONLY|os.O_RDWR) != 0 }

// usableLocked reports why the handle cannot be used, if it cannot.
func (h *Handle) usableLocked(op string) error {
	if h.closed || h.s.closed {
		return &Error{Op: op, Path: h.path.String(), Code: CodeClosed, Msg: "file handle is closed"}
	}
	return nil
}

// contentLocked returns the node the handle reads and where its content is.
func (h *Handle) contentLocked() (Node, source) {
	if h.detached {
		n := h.orphanNode
		n.Size = h.orphanSize
		if h.orphan != nil {
			n.Size = h.orphan.size.Load()
			return n, source{uf: h.orphan}
		}
		return n, source{blob: h.orphanBlob}
	}
	n, _ := h.s.tree.get(h.path)
	return h.s.liveLocked(n), h.s.nodeSourceLocked(n)
}

// Stat returns the file's node with its live size.
func (h *Handle) Stat() (Node, error) {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	if err := h.usableLocked("stat"); err != nil {
		return Node{}, err
	}
	n, _ := h.contentLocked()
	return n, nil
}

// ReadAt reads len(p) bytes at off, returning io.EOF at the end of the file.
func (h *Handle) ReadAt(p []byte, off int64) (n int, err error) {
	var b Blob
	err = h.s.fetchThen(context.Background(), func(localOnly bool) (err error) {
		b, n, err = h.readAtOnce(p, off, localOnly)
		return err
	})
	if b == nil || err != nil {
		return n, err
	}
	defer b.Close()
	return b.ReadAt(p, off)
}

// readAtOnce is one attempt of ReadAt, under s.mu (see fetchThen): it reads
// an upper file itself, and opens a blob for the caller to read after the
// lock is released.
func (h *Handle) readAtOnce(p []byte, off int64, localOnly bool) (Blob, int, error) {
	const op = "read"
	s := h.s
	s.mu.RLock()
	if err := h.usableLocked(op); err != nil {
		s.mu.RUnlock()
		return nil, 0, err
	}
	_, src := h.contentLocked()
	if uf := src.uf; uf != nil {
		uf.mu.RLock()
		s.mu.RUnlock()
		defer uf.mu.RUnlock()
		if uf.closed {
			return nil, 0, &Error{Op: op, Path: h.path.String(), Code: CodeStale, Msg: "file changed while reading; retry"}
		}
		f, err := uf.file()
		if err != nil {
			return nil, 0, ioErr(op, h.path, err)
		}
		n, err := f.ReadAt(p, off)
		return nil, n, err
	}
	b, err := s.openSourceLocked(context.Background(), src, localOnly)
	path := h.path
	s.mu.RUnlock()
	if err != nil {
		return nil, 0, ioErr(op, path, err)
	}
	return b, 0, nil
}

// WriteAt writes p at off (at the end of the file for O_APPEND handles),
// copying the file up first if needed.
func (h *Handle) WriteAt(p []byte, off int64) (int, error) {
	if !h.writable() {
		return 0, &Error{Op: "write", Path: h.Path().String(), Code: CodeInvalid, Msg: "file was not opened for writing"}
	}
	if err := h.precheckGrowth("write", off, int64(len(p))); err != nil {
		return 0, err
	}
	uf, err := h.writableUpper(-1)
	if err != nil {
		return 0, err
	}
	defer uf.mu.RUnlock()
	f, err := uf.file()
	if err != nil {
		return 0, ioErr("write", h.Path(), err)
	}
	if uf.pending != nil && (h.flags&os.O_APPEND != 0 || off+int64(len(p)) > uf.size.Load()) {
		return h.growAt(uf, f, p, off)
	}
	if h.flags&os.O_APPEND != 0 {
		off = uf.size.Load()
	}
	n, err := f.WriteAt(p, off)
	if n > 0 {
		uf.noteWrite(off + int64(n))
	}
	if err != nil {
		return n, ioErr("write", h.Path(), err)
	}
	return n, nil
}

// growAt is WriteAt for a write that may extend the file under a byte
// quota: it reserves the growth first, and refuses the whole write (EDQUOT
// through the mount) when the session has no room for it. uf.mu is held
// shared.
func (h *Handle) growAt(uf *upperFile, f *os.File, p []byte, off int64) (int, error) {
	uf.grow.Lock()
	defer uf.grow.Unlock()
	cur := uf.size.Load()
	if h.flags&os.O_APPEND != 0 {
		off = cur
	}
	end := off + int64(len(p))
	reserved := uf.over(end) - uf.over(cur)
	if reserved > 0 {
		if total, ok := h.s.reserve(reserved); !ok {
			return 0, quotaErr("write", h.Path(), "bytes", total, h.s.opts.Quota.MaxBytes,
				"remove or shorten files you no longer need")
		}
	}
	n, err := f.WriteAt(p, off)
	if got := max(cur, off+int64(n)); got < end && reserved > 0 {
		uf.pending.Add(-(uf.over(end) - uf.over(got))) // give back what did not land
	}
	if n > 0 {
		uf.noteWrite(off + int64(n))
	}
	if err != nil {
		return n, ioErr("write", h.Path(), err)
	}
	return n, nil
}

// writableUpper returns the upper file the handle writes to, read-locked,
// copying the file up first when it has none or its upper file is frozen.
// A copy-up for truncation copies only the first limit bytes (all if < 0).
func (h *Handle) writableUpper(limit int64) (*upperFile, error) {
	const op = "write"
	s := h.s
	for {
		var c copySource
		err := s.fetchThen(context.Background(), func(localOnly bool) (err error) {
			c, err = h.copySourceOnce(localOnly)
			return err
		})
		if err != nil {
			return nil, err
		}
		if c.upper != nil {
			return c.upper, nil
		}
		nuf, err := s.copyUp(c.content, limit)
		c.content.Close()
		if err != nil {
			return nil, ioErr(op, h.Path(), err)
		}
		if !h.installCopy(nuf, c.src, c.attached) {
			nuf.close(true)
		}
	}
}

// copySource is what writableUpper writes to: the handle's upper file,
// read-locked, when it is writable; else the content to copy up, where it
// came from, and whether the handle was attached to its path then.
type copySource struct {
	upper    *upperFile
	content  Blob
	src      source
	attached bool
}

// copySourceOnce is one attempt of writableUpper's look at the handle's
// content, under s.mu (see fetchThen).
func (h *Handle) copySourceOnce(localOnly bool) (copySource, error) {
	const op = "write"
	s := h.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := h.usableLocked(op); err != nil {
		return copySource{}, err
	}
	_, src := h.contentLocked()
	if uf := src.uf; uf != nil {
		uf.mu.RLock()
		if !uf.frozen && !uf.closed {
			return copySource{upper: uf}, nil
		}
		uf.mu.RUnlock()
	}
	rd, err := s.openSourceLocked(context.Background(), src, localOnly)
	if err != nil {
		return copySource{}, ioErr(op, h.path, err)
	}
	return copySource{content: rd, src: src, attached: !h.detached}, nil
}

// installCopy makes a fresh copy-up the handle's file, if the content it was
// copied from is still current; otherwise the caller discards it and retries.
func (h *Handle) installCopy(nuf *upperFile, src source, attached bool) bool {
	s := h.s
	s.mu.Lock()
	if h.closed || s.closed || h.detached == attached {
		// Closed, or detached since the copy started.
		s.mu.Unlock()
		return false
	}
	if _, cur := h.contentLocked(); cur != src {
		s.mu.Unlock()
		return false
	}
	if h.detached {
		old := h.orphan
		nuf.refs = 1
		h.orphan = nuf
		if old != nil {
			s.releaseUpperLocked(old)
		}
		s.mu.Unlock()
		return true
	}
	e := &Event{Op: OpCopyUp, Path: h.path, Ino: h.ino, Upper: nuf.id, Time: s.now(), Origin: h.origin}
	seq, err := s.applyLocked("write", e)
	if err != nil {
		s.mu.Unlock()
		return false
	}
	s.registerLocked(nuf)
	s.mu.Unlock()
	s.notify(seq, e, h.origin)
	return true
}

// Truncate sets the file's size, copying it up first if needed, and commits.
func (h *Handle) Truncate(size int64) error {
	const op = "truncate"
	if size < 0 {
		return &Error{Op: op, Path: h.Path().String(), Code: CodeInvalid, Msg: "size must not be negative"}
	}
	if !h.writable() {
		return &Error{Op: op, Path: h.Path().String(), Code: CodeInvalid, Msg: "file was not opened for writing"}
	}
	if err := h.precheckGrowth(op, size, 0); err != nil {
		return err
	}
	s := h.s
	for {
		uf, err := h.writableUpper(size)
		if err != nil {
			return err
		}
		uf.mu.RUnlock()
		s.mu.Lock()
		if _, cur := h.contentLocked(); cur.uf != uf {
			s.mu.Unlock()
			continue
		}
		uf.mu.Lock()
		if uf.closed || uf.frozen {
			uf.mu.Unlock()
			s.mu.Unlock()
			continue
		}
		if err = s.reserveTruncateLocked(h.path, uf, size); err != nil {
			uf.mu.Unlock()
			s.mu.Unlock()
			return err
		}
		var f *os.File
		if f, err = uf.file(); err == nil {
			err = f.Truncate(size)
		}
		if err == nil {
			if uf.pending != nil {
				uf.pending.Add(uf.over(size) - uf.over(uf.size.Load()))
			}
			uf.size.Store(size)
			uf.dirty.Store(true)
		}
		uf.mu.Unlock()
		if err != nil {
			s.mu.Unlock()
			return ioErr(op, h.path, err)
		}
		return h.commitAndUnlock(op, uf)
	}
}

// Flush commits the handle's file: writes since the last commit become one
// event. A detached handle has nothing to commit.
func (h *Handle) Flush() error {
	const op = "flush"
	s := h.s
	// Most flushes find nothing to commit (close(2) after the writes were
	// committed, by settimes or an earlier flush): that needs no
	// exclusive lock. A write that returned has marked its file dirty.
	s.mu.RLock()
	if err := h.usableLocked(op); err != nil {
		s.mu.RUnlock()
		return err
	}
	_, src := h.contentLocked()
	clean := h.detached || src.uf == nil || !src.uf.dirty.Load()
	s.mu.RUnlock()
	if clean {
		return nil
	}
	s.mu.Lock()
	if err := h.usableLocked(op); err != nil {
		s.mu.Unlock()
		return err
	}
	_, src = h.contentLocked()
	return h.commitAndUnlock(op, src.uf)
}

// commitAndUnlock commits uf, if it is the attached file's dirty upper
// file, releases s.mu and waits as the handle's durability asks.
func (h *Handle) commitAndUnlock(op string, uf *upperFile) error {
	s := h.s
	if h.detached || uf == nil {
		s.mu.Unlock()
		return nil
	}
	seq, e, err := s.commitUpperLocked(op, h.path, h.ino, uf, h.origin)
	s.mu.Unlock()
	if err != nil || e == nil {
		return err
	}
	return s.commit(h.ctx(), seq, e)
}

// commitUpperLocked turns the writes into uf since its last commit into a
// commit event, of the given origin (if any). s.mu must be held for
// writing.
func (s *Session) commitUpperLocked(op string, p Path, ino uint64, uf *upperFile, origin ...string) (uint64, *Event, error) {
	o := ""
	if len(origin) > 0 {
		o = origin[0]
	}
	return s.commitUpperWithLocked(op, p, ino, uf, o, nil)
}

// commitUpperWithLocked is commitUpperLocked journaling the commit and the
// event then, when not nil, as one batch; with nothing to commit it applies
// then alone (nil: nothing). s.mu must be held for writing.
func (s *Session) commitUpperWithLocked(op string, p Path, ino uint64, uf *upperFile, origin string, then *Event) (uint64, *Event, error) {
	uf.mu.Lock()
	defer uf.mu.Unlock()
	if !uf.dirty.Load() || uf.closed {
		if then == nil {
			return 0, nil, nil
		}
		seq, err := s.applyLocked(op, then)
		return seq, then, err
	}
	f, err := uf.file()
	if err != nil {
		return 0, nil, ioErr(op, p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, ioErr(op, p, err)
	}
	e := &Event{Op: OpCommit, Path: p, Ino: ino, Upper: uf.id, Size: fi.Size(), Time: s.now()}
	e.Origin = origin
	if then != nil {
		e = &Event{Op: OpBatch, Path: p, Time: e.Time, Origin: origin, Batch: []Event{*e, *then}}
	}
	seq, err := s.applyLocked(op, e)
	if err != nil {
		return 0, nil, err
	}
	uf.settlePending() // the growth is in the tree now
	uf.committed = fi.Size()
	uf.dirty.Store(false)
	return seq, e, nil
}

// Sync makes the handle's writes durable: the upper file's data, then the
// commit event.
func (h *Handle) Sync() error {
	s := h.s
	s.mu.RLock()
	if err := h.usableLocked("sync"); err != nil {
		s.mu.RUnlock()
		return err
	}
	_, src := h.contentLocked()
	if uf := src.uf; uf != nil {
		uf.mu.RLock()
		s.mu.RUnlock()
		var err error
		if !uf.closed {
			var f *os.File
			if f, err = uf.file(); err == nil {
				err = f.Sync()
			}
		}
		uf.mu.RUnlock()
		if err != nil {
			return ioErr("sync", h.Path(), err)
		}
	} else {
		s.mu.RUnlock()
	}
	if err := h.Flush(); err != nil {
		return err
	}
	return s.Sync()
}

// Close commits the handle's writes and releases it. Closing twice is not
// an error.
func (h *Handle) Close() error {
	s := h.s
	s.mu.RLock()
	closed := h.closed
	s.mu.RUnlock()
	if closed {
		return nil
	}
	err := h.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	hs := s.handles[h.ino]
	for i, o := range hs {
		if o == h {
			s.handles[h.ino] = append(hs[:i:i], hs[i+1:]...)
			break
		}
	}
	if len(s.handles[h.ino]) == 0 {
		delete(s.handles, h.ino)
	}
	delete(s.detached, h)
	h.releaseOrphan()
	if CodeOf(err) == CodeClosed {
		err = nil
	}
	return err
}

// releaseOrphan lets go of a detached handle's private upper file. s.mu must
// be held for writing.
func (h *Handle) releaseOrphan() {
	if h.orphan != nil {
		h.s.releaseUpperLocked(h.orphan)
		h.orphan = nil
	}
}

// detachLocked turns h into a handle on n's content alone; n has just left
// the tree. s.mu must be held for writing.
func (h *Handle) detachLocked(n Node) {
	s := h.s
	h.detached = true
	s.detached[h] = struct{}{}
	h.orphanNode = n
	h.orphanBlob, h.orphanSize = n.Blob, n.Size
	if n.Upper != 0 {
		if uf := s.uppers[n.Upper]; uf != nil {
			uf.refs++
			h.orphan = uf
		}
	}
}

// moveHandlesLocked keeps handles on their files when from moves to to, or
// when the two are exchanged.
func (s *Session) moveHandlesLocked(from, to Path, exchange bool) {
	for _, hs := range s.handles {
		for _, h := range hs {
			switch {
			case h.path.HasPrefix(from):
				h.path = h.path.Rebase(from, to)
			case exchange && h.path.HasPrefix(to):
				h.path = h.path.Rebase(to, from)
			}
		}
	}
}
