package vfs

import (
	"context"
	"fmt"
	"io"
	"os"
)

// liveLocked returns n with the live size of its upper file, which includes
// writes not yet committed. s.mu must be held.
func (s *Session) liveLocked(n Node) Node {
	if n.Upper != 0 {
		if uf := s.uppers[n.Upper]; uf != nil {
			n.Size = uf.size.Load()
		}
	}
	return n
}

// missingErr explains why p is not in t, as reported by operation op.
func missingErr(t Tree, op string, p Path) error { return withOp(missing(t, p), op) }

// Stat returns the node at p, with the live size of a file being written
// through a handle.
func (s *Session) Stat(ctx context.Context, p Path) (Node, error) {
	const op = "stat"
	if err := s.check(op, AccessRead, p); err != nil {
		return Node{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Node{}, closedErr(op)
	}
	n, ok, err := s.tree.Lookup(p)
	switch {
	case err != nil:
		return Node{}, withOp(err, op)
	case !ok:
		return Node{}, missingErr(s.tree, op, p)
	}
	return s.liveLocked(n), nil
}

// List returns the children of directory dir, sorted by name.
func (s *Session) List(ctx context.Context, dir Path) ([]DirEntry, error) {
	const op = "list"
	if err := s.check(op, AccessRead, dir); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, closedErr(op)
	}
	n, ok, err := s.tree.Lookup(dir)
	switch {
	case err != nil:
		return nil, withOp(err, op)
	case !ok:
		return nil, missingErr(s.tree, op, dir)
	case !n.IsDir():
		return nil, newErr(CodeNotDir, op, dir, "is not a directory")
	}
	var out []DirEntry
	err = s.tree.ChildrenErr(dir, func(name string, n Node) bool {
		out = append(out, DirEntry{Name: name, Node: s.liveLocked(n)})
		return true
	})
	if err != nil {
		return nil, withOp(err, op)
	}
	return out, nil
}

// Walk calls fn for root and every node beneath it in path order, on the
// tree as it is when Walk is called; see Tree.Walk.
func (s *Session) Walk(ctx context.Context, root Path, fn func(Path, Node) error) error {
	const op = "walk"
	if err := s.check(op, AccessRead, root); err != nil {
		return err
	}
	t := s.Tree()
	if _, ok, err := t.Lookup(root); err != nil || !ok {
		if err != nil {
			return withOp(err, op)
		}
		return missingErr(t, op, root)
	}
	return t.Walk(root, func(p Path, n Node) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(p, n)
	})
}

// Reader reads one file's content as it was when opened (or, for a file
// being written through a handle, as it is).
type Reader struct {
	Node Node
	b    Blob
}

// ReadAt implements io.ReaderAt.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) { return r.b.ReadAt(p, off) }

// Size returns the content's size.
func (r *Reader) Size() int64 { return r.b.Size() }

// Close releases the reader.
func (r *Reader) Close() error { return r.b.Close() }

// File returns the local file the reader reads, when the content is in
// one (a store blob or an upper file), for in-kernel reads such as FUSE
// passthrough. The file must not be written to, and is closed by Close.
func (r *Reader) File() (*os.File, bool) {
	if fb, ok := r.b.(FileBlob); ok {
		return fb.File(), true
	}
	return nil, false
}

// Open returns a reader of the file at p. Unchanged files are read straight
// from their blob: nothing is copied.
func (s *Session) Open(ctx context.Context, p Path) (*Reader, error) {
	const op = "read"
	if err := s.check(op, AccessRead, p); err != nil {
		return nil, err
	}
	var r *Reader
	err := s.fetchThen(ctx, func(localOnly bool) (err error) {
		r, err = s.openOnce(ctx, op, p, localOnly)
		return err
	})
	return r, err
}

// openOnce is one attempt of Open, under s.mu (see fetchThen).
func (s *Session) openOnce(ctx context.Context, op string, p Path, localOnly bool) (*Reader, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, closedErr(op)
	}
	n, ok, err := s.tree.Lookup(p)
	switch {
	case err != nil:
		return nil, withOp(err, op)
	case !ok:
		return nil, missingErr(s.tree, op, p)
	case n.IsDir():
		return nil, newErr(CodeIsDir, op, p, "is a directory")
	case n.IsSymlink():
		return nil, newErr(CodeInvalid, op, p, "is a symlink; read its target instead")
	case n.IsSpecial():
		return nil, newErr(CodeInvalid, op, p, fmt.Sprintf("is a %s, which has no content to read", n.Kind))
	}
	b, err := s.openSourceLocked(ctx, s.nodeSourceLocked(n), localOnly)
	if err != nil {
		return nil, ioErr(op, p, err)
	}
	n.Size = b.Size()
	return &Reader{Node: n, b: b}, nil
}

// ReadFile returns the whole content of the file at p and its node.
func (s *Session) ReadFile(ctx context.Context, p Path) ([]byte, Node, error) {
	r, err := s.Open(ctx, p)
	if err != nil {
		return nil, Node{}, err
	}
	defer r.Close()
	buf := make([]byte, r.Size())
	if _, err := io.ReadFull(io.NewSectionReader(r, 0, r.Size()), buf); err != nil {
		return nil, Node{}, ioErr("read", p, err)
	}
	return buf, r.Node, nil
}

// ReadAt reads from the file at p at offset off, like io.ReaderAt.
func (s *Session) ReadAt(ctx context.Context, p Path, buf []byte, off int64) (int, error) {
	r, err := s.Open(ctx, p)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return r.ReadAt(buf, off)
}

// Readlink returns the target of the symlink at p.
func (s *Session) Readlink(ctx context.Context, p Path) (string, error) {
	n, err := s.Stat(ctx, p)
	if err != nil {
		return "", err
	}
	if !n.IsSymlink() {
		return "", newErr(CodeInvalid, "readlink", p, "is not a symlink")
	}
	return n.Target, nil
}

// BlobRefs calls fn for every blob the session references: its tree's file
// contents, those of frozen trees not yet released, the content detached
// handles still read, and every blob its history names (so it can be
// rewound). Garbage collection keeps them, and uses WalkBlobRefs: in a
// lazily loaded tree a directory that cannot be read is skipped here.
func (s *Session) BlobRefs(fn func(Hash)) { _ = s.WalkBlobRefs(fn) }

// WalkBlobRefs is BlobRefs, returning the error that stopped it: a lazily
// loaded directory whose manifest could not be read. fn may have been
// called for some blobs by then.
func (s *Session) WalkBlobRefs(fn func(Hash)) error {
	s.mu.RLock()
	hist := make([]Hash, 0, len(s.hist.blobs))
	for h := range s.hist.blobs {
		hist = append(hist, h)
	}
	trees := []Tree{s.tree}
	if s.hist.trimmed {
		// The history starts at a state no snapshot holds: its content is
		// what rewinds to the start still need.
		trees = append(trees, s.hist.cps[0].tree)
	}
	for f := range s.frozen {
		trees = append(trees, f.Tree)
	}
	var orphans []Hash
	for h := range s.detached {
		if !h.orphanBlob.IsZero() {
			orphans = append(orphans, h.orphanBlob)
		}
	}
	s.mu.RUnlock()
	for _, h := range orphans {
		fn(h)
	}
	for _, h := range hist {
		fn(h)
	}
	for _, t := range trees {
		err := t.Walk(Root, func(_ Path, n Node) error {
			if !n.Blob.IsZero() {
				fn(n.Blob)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// LocalPath returns a local file that holds the content of file node n, for
// programs that read content in place (ripgrep): its upper file, or its
// blob's file when the blob store is a LocalBlobStore. It reports false
// for empty files, for stores without local files, and for non-files. The
// file may change or vanish once the session changes; never write to it.
func (s *Session) LocalPath(n Node) (string, bool) {
	if !n.IsFile() {
		return "", false
	}
	if n.Upper != 0 {
		return s.upperPath(n.Upper), true
	}
	if n.Blob == EmptyHash || n.Blob.IsZero() {
		return "", false
	}
	if ls, ok := s.opts.Blobs.(LocalBlobStore); ok {
		return ls.BlobPath(n.Blob)
	}
	return "", false
}
