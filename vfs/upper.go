package vfs

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/internal/osfile"
)

// upperFile is one file in the session's upper directory: the content of a
// copied-up file. Writers hold mu shared while they pwrite; committing,
// freezing and closing hold it exclusively, so none of them ever sees half a
// write. Once frozen, an upper file is never written again: the next write
// copies it up anew.
type upperFile struct {
	id   uint64
	path string

	mu     sync.RWMutex
	frozen bool // guarded by mu
	closed bool // guarded by mu

	// The descriptor, opened on demand and closed when idle (see fdCache).
	// Use it only through file(), holding mu.
	fmu  sync.Mutex
	f    *os.File
	elem *list.Element // place in the fdCache, guarded by fdCache.mu

	dirty atomic.Bool  // written since the last commit
	size  atomic.Int64 // live size, including uncommitted writes

	// Under a byte quota: pending is the session's account of uncommitted
	// growth (nil without a quota), committed the size last committed
	// (guarded by mu, written only when held exclusively), and grow
	// serialises the writes that extend the file, which reserve their
	// growth before they land.
	pending   *atomic.Int64
	committed int64
	grow      sync.Mutex

	inTree bool // the tree references it; guarded by Session.mu
	refs   int  // detached handles holding it; guarded by Session.mu
}

// noteWrite records a write that ended at offset end.
func (uf *upperFile) noteWrite(end int64) {
	uf.dirty.Store(true)
	for {
		cur := uf.size.Load()
		if end <= cur || uf.size.CompareAndSwap(cur, end) {
			return
		}
	}
}

// close closes the file, waiting for writes in flight, and removes it from
// the upper directory when asked.
func (uf *upperFile) close(remove bool) {
	uf.mu.Lock()
	defer uf.mu.Unlock()
	if uf.closed {
		return
	}
	uf.closed = true
	uf.settlePending()
	uf.fmu.Lock()
	if uf.f != nil {
		upperFDs.remove(uf)
		uf.f.Close()
		uf.f = nil
	}
	uf.fmu.Unlock()
	if remove {
		_ = os.Remove(uf.path)
	}
}

func (s *Session) upperPath(id uint64) string {
	return filepath.Join(s.upperDir, strconv.FormatUint(id, 16))
}

// source is where a file's content is: a blob, or an upper file.
type source struct {
	blob Hash
	uf   *upperFile
}

// nodeSourceLocked returns where n's content is. s.mu must be held.
func (s *Session) nodeSourceLocked(n Node) source {
	if n.Upper != 0 {
		return source{uf: s.uppers[n.Upper]}
	}
	return source{blob: n.Blob}
}

// openSourceLocked opens content for reading. The caller holds Session.mu
// (at least shared), so the content cannot be dropped while it is opened;
// the reader stays valid after the lock is released, even if the content is
// dropped later. An upper file is read through a duplicate descriptor, so
// the reader sees the file's live content.
//
// With localOnly, a blob the store must fetch first is not waited for: the
// error is a *notLocalError, on which the caller lets go of the lock and
// has fetchThen fetch it and try again.
func (s *Session) openSourceLocked(ctx context.Context, src source, localOnly bool) (Blob, error) {
	if src.uf != nil {
		return src.uf.openReader()
	}
	switch src.blob {
	case Hash{}:
		return nil, errors.New("content has neither blob nor upper file")
	case EmptyHash:
		return emptyBlob{}, nil // empty content needs no store
	}
	if f, ok := s.opts.Blobs.(FetchingBlobStore); ok && localOnly {
		b, err := f.OpenLocal(ctx, src.blob)
		if errors.Is(err, ErrNotLocal) {
			return nil, &notLocalError{blob: src.blob}
		}
		return b, err
	}
	return s.opts.Blobs.Open(ctx, src.blob)
}

// maxFetchAhead bounds how often fetchThen fetches and tries again before
// its last try, which fetches with the lock held (as a store without a
// remote reads): content that keeps changing, or a cache so small that a
// blob is evicted before it is opened, must still be read in the end.
const maxFetchAhead = 3

// fetchThen runs attempt, which takes Session.mu, reads content with
// openSourceLocked and lets go of the lock, first with localOnly set. When
// the content is a blob still to be fetched (attempt's error wraps a
// *notLocalError, in the *Error that names the operation and path), it is
// fetched with no lock held and attempt runs again, since the file may have
// changed meanwhile. A fetch that fails is reported as that operation's
// error, with the fetch's code.
func (s *Session) fetchThen(ctx context.Context, attempt func(localOnly bool) error) error {
	f, ok := s.opts.Blobs.(FetchingBlobStore)
	if !ok {
		return attempt(false)
	}
	for range maxFetchAhead {
		err := attempt(true)
		var nl *notLocalError
		if !errors.As(err, &nl) {
			return err
		}
		if ferr := f.Fetch(ctx, nl.blob); ferr != nil {
			// The fetch's own code (too_large) when it has one; io
			// otherwise: content missing from the remote too is an io
			// error of a file that exists, never not_found.
			code := CodeOf(ferr)
			if code == CodeNotFound {
				code = CodeIO
			}
			e := &Error{Code: code, Msg: "fetching the content failed", Err: ferr}
			var at *Error
			if errors.As(err, &at) {
				e.Op, e.Path = at.Op, at.Path
			}
			return e
		}
	}
	return attempt(false)
}

// emptyBlob is the empty content, which every file starts as.
type emptyBlob struct{}

func (emptyBlob) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }
func (emptyBlob) Close() error                      { return nil }
func (emptyBlob) Size() int64                       { return 0 }

// openReader returns an independent reader of the upper file: its own
// descriptor, which stays valid after the file is removed.
func (uf *upperFile) openReader() (Blob, error) {
	uf.mu.RLock()
	defer uf.mu.RUnlock()
	if uf.closed {
		return nil, errors.New("upper file is closed")
	}
	f, err := osfile.Open(uf.path)
	if err != nil {
		return nil, fmt.Errorf("open upper file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osBlob{f: f, size: fi.Size()}, nil
}

// readerOf reads a blob from start to end; the holes of a local file come
// as zeros without being read.
func readerOf(b Blob) io.Reader {
	if fb, ok := b.(FileBlob); ok {
		return NewSparseReader(fb.File(), b.Size())
	}
	return io.NewSectionReader(b, 0, b.Size())
}

// osBlob is an open local file seen as a Blob.
type osBlob struct {
	f    *os.File
	size int64
}

func (b *osBlob) ReadAt(p []byte, off int64) (int, error) { return b.f.ReadAt(p, off) }
func (b *osBlob) Close() error                            { return b.f.Close() }
func (b *osBlob) Size() int64                             { return b.size }
func (b *osBlob) File() *os.File                          { return b.f }

// copyUp creates a new upper file holding the first limit bytes of src (all
// of it when limit < 0). It runs without Session.mu: the source is immutable
// and the new file is not yet registered.
func (s *Session) copyUp(src Blob, limit int64) (*upperFile, error) {
	n := src.Size()
	if limit >= 0 && limit < n {
		n = limit
	}
	uf, err := s.createUpper()
	if err != nil {
		return nil, err
	}
	if err := CopyBlob(uf.f, src, n); err != nil {
		uf.f.Close()
		os.Remove(uf.path)
		return nil, fmt.Errorf("copy up: %w", err)
	}
	uf.committed = src.Size()
	if s.quotaBytes() {
		uf.pending = &s.pending
	}
	uf.size.Store(n)
	if n < src.Size() {
		// A shortened copy (for truncation) differs from the node's content:
		// it is a change to commit, whoever commits next.
		uf.dirty.Store(true)
	}
	upperFDs.add(uf)
	return uf, nil
}

// createUpper creates a new, empty upper file, open, not yet registered
// nor in the descriptor cache.
func (s *Session) createUpper() (*upperFile, error) {
	id := s.upperSeq.Add(1)
	path := s.upperPath(id)
	f, err := osfile.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create upper file: %w", err)
	}
	return &upperFile{id: id, path: path, f: f}, nil
}

// newUpper creates a new, empty upper file, not yet registered.
func (s *Session) newUpper() (*upperFile, error) { return s.copyUp(emptyBlob{}, -1) }

// discard closes and removes an upper file that was never registered; nil
// is ignored.
func (uf *upperFile) discard() {
	if uf != nil {
		uf.close(true)
	}
}

// emptiesOnOpen reports whether an open for writing with flag is about to
// create the file at p (O_CREATE, and no node there) or empty it (O_TRUNC
// of a file with content): then it takes a new, empty upper file.
func (s *Session) emptiesOnOpen(p Path, flag int) bool {
	if flag&(os.O_CREATE|os.O_TRUNC) == 0 {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.tree.get(p)
	if !ok {
		return flag&os.O_CREATE != 0
	}
	return flag&os.O_TRUNC != 0 && n.IsFile() && (n.Size != 0 || n.Upper != 0)
}

// CopyBlob fills the empty file dst with the first n bytes of src: by
// reflink when the filesystem shares extents, by copy_file_range inside the
// kernel otherwise, and by read and write as a last resort. Holes in src
// stay holes in dst: only src's data ranges (SEEK_DATA, SEEK_HOLE) are
// copied, and zeros read in the last resort are seeked over.
func CopyBlob(dst *os.File, src Blob, n int64) error {
	if n == 0 {
		return nil
	}
	if fb, ok := src.(FileBlob); ok {
		if done, err := copyBlobFast(dst, fb, n); done || err != nil {
			return err
		}
	}
	w := NewSparseWriter(dst)
	got, err := io.Copy(w, io.NewSectionReader(src, 0, n))
	if err == nil && got != n {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = w.Finish()
	}
	return err
}

// registerLocked records that the tree now references uf.
func (s *Session) registerLocked(uf *upperFile) {
	uf.inTree = true
	s.uppers[uf.id] = uf
}

// dropUpperLocked records that the tree no longer references upper file id:
// the file is closed and removed (in the background) unless a detached
// handle still holds it.
func (s *Session) dropUpperLocked(id uint64) {
	uf := s.uppers[id]
	if uf == nil {
		s.removals.remove(s.upperPath(id))
		return
	}
	delete(s.uppers, id)
	uf.inTree = false
	if uf.refs == 0 {
		uf.close(false)
		s.removals.remove(uf.path)
	}
}

// releaseUpperLocked drops a detached handle's hold on uf.
func (s *Session) releaseUpperLocked(uf *upperFile) {
	uf.refs--
	if uf.refs == 0 && !uf.inTree {
		uf.close(true)
	}
}

// dropNodeLocked handles node n, a name of which left the tree going from
// old to t (removed, or replaced by a rename). A hard-linked node that
// keeps a name in t stays: handles open on it follow it to that name.
// Otherwise handles open on it are detached and keep its content, and its
// upper file is dropped.
func (s *Session) dropNodeLocked(old, t Tree, n Node) {
	if !n.IsDir() && n.Nlink > 1 {
		for _, q := range old.LinkNames(n.Ino) {
			if m, ok := t.get(q); ok && m.Ino == n.Ino {
				for _, h := range s.handles[n.Ino] {
					if m, ok := t.get(h.path); !ok || m.Ino != n.Ino {
						h.path = q
					}
				}
				return
			}
		}
	}
	for _, h := range s.handles[n.Ino] {
		h.detachLocked(n)
	}
	delete(s.handles, n.Ino)
	if n.Upper != 0 {
		s.dropUpperLocked(n.Upper)
	}
}

// settleLocked brings the state outside the tree — upper files and handles
// — in line with an event just applied, which took the tree from old to t.
func (s *Session) settleLocked(old, t Tree, e *Event) {
	switch e.Op {
	case OpBatch:
		// Each change settles against the trees before and after it; the
		// trees between are folded again only up to the last change that
		// has anything to settle.
		last := -1
		for i := range e.Batch {
			if settles(e.Batch[i].Op) {
				last = i
			}
		}
		cur := old
		for i := 0; i <= last; i++ {
			next := t
			if i < len(e.Batch)-1 {
				var err error
				if next, err = Reduce(cur, &e.Batch[i]); err != nil {
					return // cannot happen: the batch was applied
				}
			}
			s.settleLocked(cur, next, &e.Batch[i])
			cur = next
		}
	case OpWrite:
		if n, ok := old.get(e.Path); ok && n.Upper != 0 {
			s.dropUpperLocked(n.Upper)
		}
	case OpRemove:
		_ = old.Walk(e.Path, func(_ Path, n Node) error {
			s.dropNodeLocked(old, t, n)
			return nil
		})
	case OpRename:
		if e.Path == e.To {
			return
		}
		if n, ok := old.get(e.To); ok && !e.Exchange {
			s.dropNodeLocked(old, t, n)
		}
		s.moveHandlesLocked(e.Path, e.To, e.Exchange)
	case OpCopyUp, OpCommit:
		if n, ok := old.get(e.Path); ok && n.Upper != 0 && n.Upper != e.Upper {
			s.dropUpperLocked(n.Upper)
		}
	case OpSeal:
		for _, sl := range e.Seals {
			if n, ok := old.get(sl.Path); ok && n.Ino == sl.Ino && n.Upper == sl.Upper {
				s.dropUpperLocked(sl.Upper)
			}
		}
	}
}

// settles reports whether settleLocked has anything to do for op.
func settles(op Op) bool {
	switch op {
	case OpBatch, OpWrite, OpRemove, OpRename, OpCopyUp, OpCommit, OpSeal:
		return true
	}
	return false
}

// recoverUppers opens every upper file the recovered tree references,
// truncating each to its committed size (writes that were never committed
// were never acknowledged), and removes the rest.
func (s *Session) recoverUppers() error {
	var err error
	_ = s.tree.walkLoaded(Root, func(p Path, n Node) error {
		if n.Upper == 0 {
			return nil
		}
		path := s.upperPath(n.Upper)
		if terr := reclaimUpper(path, n.Size); terr != nil {
			err = fmt.Errorf("upper file of %s: %w", p, terr)
			return err
		}
		uf := &upperFile{id: n.Upper, path: path, committed: n.Size}
		if s.quotaBytes() {
			uf.pending = &s.pending
		}
		uf.size.Store(n.Size)
		s.registerLocked(uf)
		return nil
	})
	if err != nil {
		return err
	}
	return s.removeStrayUppersLocked()
}

// reclaimUpper makes the upper file at path the session's own again after
// a crash, and truncates it to its committed size (writes never committed
// were never acknowledged). A crash while a snapshot sealed it may have
// left it read-only, or linked into the blob store as a blob (a second name
// of the same inode: see Session.sealOne): such a file is never written or
// truncated in place, which would change the blob, but replaced by a copy
// of its first size bytes first.
func reclaimUpper(path string, size int64) error {
	f, err := osfile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	shared, err := linkCount(f)
	if err != nil {
		return err
	}
	if shared > 1 {
		return replaceByCopy(path, f, size)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o600 != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("make writable again: %w", err)
		}
	}
	return os.Truncate(path, size)
}

// replaceByCopy replaces the file at path, open as src, by a copy of its
// first size bytes (holes kept), synced before it takes the name.
func replaceByCopy(path string, src *os.File, size int64) error {
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	tmp := path + ".reclaim" // no upper file's name: a crash leaves a stray recovery removes
	_ = os.Remove(tmp)
	dst, err := osfile.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("copy a sealed upper file: %w", err)
	}
	err = CopyBlob(dst, &osBlob{f: src, size: fi.Size()}, min(size, fi.Size()))
	if err == nil {
		err = dst.Truncate(size)
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy a sealed upper file: %w", err)
	}
	return nil
}

// removeStrayUppersLocked removes every file in the upper directory that
// neither the tree nor a handle uses, and keeps upper file numbers beyond
// any found there.
func (s *Session) removeStrayUppersLocked() error {
	entries, err := os.ReadDir(s.upperDir)
	if err != nil {
		return fmt.Errorf("read upper dir: %w", err)
	}
	inUse := make(map[uint64]bool, len(s.uppers))
	for id := range s.uppers {
		inUse[id] = true
	}
	for h := range s.detached {
		if h.orphan != nil {
			inUse[h.orphan.id] = true
		}
	}
	for _, de := range entries {
		id, perr := strconv.ParseUint(de.Name(), 16, 64)
		if perr == nil && id > s.upperSeq.Load() {
			s.upperSeq.Store(id)
		}
		if perr != nil || !inUse[id] {
			_ = os.Remove(filepath.Join(s.upperDir, de.Name()))
		}
	}
	return nil
}
