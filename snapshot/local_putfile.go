package snapshot

// This file holds LocalStore.PutFile: a local file's content stored as an
// object by taking the file itself (a hard link) or a clone of it, where
// Put would copy it through the process.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vfsd/vfsd/internal/crashpoint"
	"github.com/vfsd/vfsd/vfs"
)

// PutFileOptions tune LocalStore.PutFile.
type PutFileOptions struct {
	// Frozen says that nobody writes the file any more, nor ever will
	// through any descriptor open now or opened later (a session's upper
	// file once sealed): the store may then take the file itself as the
	// object, by a hard link, rather than a copy. The file becomes
	// read-only (mode 0444); its other names keep naming the object's
	// inode, so they must never be written, truncated or chmodded again.
	Frozen bool
	// Deferred skips the per-object fsyncs, as PutOptions.Deferred.
	Deferred bool
	// Observe, when set, is written every byte of the content as it is
	// hashed, in order (holes as zeros): a caller sniffs the content in the
	// same pass.
	Observe io.Writer
}

// PutFileResult tells how PutFile stored a file.
type PutFileResult struct {
	Hash vfs.Hash
	Size int64
	// How is "link" (the file itself became the object), "clone" (a
	// reflink: the object shares the file's extents), "copy" (the
	// content was copied, as Put does) or "dedup" (the object was
	// stored already).
	How string
}

// PutFile stores the content of f, an open regular file, as an object in
// ns, and returns its hash and size. It copies no content where it can
// help it:
//
//   - with opts.Frozen, on the store's filesystem, the file itself becomes
//     the object: it is made read-only, hashed, and linked under the
//     object's name (linkat of /proc/self/fd/N, which never replaces an
//     existing object) — no temporary name, no rename: nobody writes a
//     frozen file, so the bytes hashed are the bytes published;
//   - otherwise a clone of it (FICLONE, on filesystems that share extents:
//     XFS, Btrfs) is made in tmp/, hashed, and published in the same way;
//   - otherwise its content is stored by Put, which copies it.
//
// The object's name is always the hash of the bytes under it, read after
// they were linked or cloned into the store's temporary name: a crash at
// any point leaves either no object or a whole one (temporary names are
// removed by OpenLocal), and a file changed while being hashed (its size,
// mtime or ctime moved) is refused with an error and published nowhere.
// Holes are read as zeros without being read; a linked or cloned object
// keeps the file's layout, sparse or not.
func (s *LocalStore) PutFile(ctx context.Context, ns Namespace, f *os.File, opts PutFileOptions) (PutFileResult, error) {
	const op = "put file"
	if err := s.check(ctx, op, ns); err != nil {
		return PutFileResult{}, err
	}
	opts.Deferred = opts.Deferred && localDeferOK
	fi, err := f.Stat()
	if err != nil {
		return PutFileResult{}, fmt.Errorf("put %s: %w", ns, err)
	}
	if !fi.Mode().IsRegular() {
		return PutFileResult{}, fmt.Errorf("put %s: %s is not a regular file", ns, f.Name())
	}
	res, err := s.putFileInPlace(ctx, ns, f, fi.Size(), opts)
	if errors.Is(err, errors.ErrUnsupported) {
		// Neither a link nor a clone: copy, as Put does.
		var r io.Reader = vfs.NewSparseReader(f, fi.Size())
		if opts.Observe != nil {
			r = io.TeeReader(r, opts.Observe)
		}
		res.Hash, res.Size, err = s.put(ctx, ns, r, PutOptions{Deferred: opts.Deferred})
		res.How = "copy"
	}
	if err != nil {
		return PutFileResult{}, fmt.Errorf("put %s: %s: %w", ns, f.Name(), err)
	}
	return res, nil
}

// putFileInPlace is PutFile by a link (opts.Frozen) or a clone; it fails
// with errors.ErrUnsupported, having created nothing, when the store can
// do neither for f.
func (s *LocalStore) putFileInPlace(ctx context.Context, ns Namespace, f *os.File, size int64, opts PutFileOptions) (PutFileResult, error) {
	if !s.tmpfileOK.Load() {
		return PutFileResult{}, errors.ErrUnsupported // no /proc: no way to link f
	}
	if opts.Frozen && localSameDevice(f, s.dir) {
		return s.putFrozenFile(ctx, ns, f, size, opts)
	}
	spread := rand.IntN(256)
	dir := s.tmpSub(spread)
	if err := s.ensureDir(dir); err != nil {
		return PutFileResult{}, fmt.Errorf("create temporary directory: %w", err)
	}
	name := filepath.Join(dir, "file-"+strconv.FormatUint(rand.Uint64(), 36))
	var (
		src = f // what is hashed and published: f itself, or its clone
		how string
	)
	if opts.Frozen {
		switch err := localLinkFile(f, name); {
		case err == nil:
			how = "link"
		case errors.Is(err, errors.ErrUnsupported), localCrossDevice(err):
		default:
			return PutFileResult{}, fmt.Errorf("link into the store: %w", err)
		}
	}
	if how == "" {
		clone, err := localClone(f, name, &s.cloneOK)
		if err != nil {
			return PutFileResult{}, err // errors.ErrUnsupported when the filesystem cannot
		}
		defer clone.Close()
		src, how = clone, "clone"
	}
	tmp := &localTemp{name: name} // removes the temporary name unless published
	defer tmp.discard()
	crashpoint.Hit("putfile-linked")

	res, err := s.hashFile(ctx, src, size, how, opts)
	if err != nil {
		return PutFileResult{}, err
	}
	return s.publishFile(ctx, ns, res, opts, func(final string) error {
		err := localRenameNoReplace(name, final)
		tmp.kept = err == nil
		return err
	})
}

// putFrozenFile is PutFile of a frozen file on the store's filesystem: the
// file is made read-only, hashed, and linked under its object's name. A
// crash before the link publishes nothing (the file stays where it was,
// read-only); after it, the object is whole.
func (s *LocalStore) putFrozenFile(ctx context.Context, ns Namespace, f *os.File, size int64, opts PutFileOptions) (PutFileResult, error) {
	res, err := s.hashFile(ctx, f, size, "link", opts)
	if err != nil {
		return PutFileResult{}, err
	}
	return s.publishFile(ctx, ns, res, opts, func(final string) error { return localLinkFile(f, final) })
}

// publishFile puts a hashed file under its object's name with place — the
// rename of its temporary name, or a link of the file itself — which
// must fail with fs.ErrExist rather than replace an object: an object
// there already makes the put a dedup.
func (s *LocalStore) publishFile(ctx context.Context, ns Namespace, res PutFileResult, opts PutFileOptions, place func(final string) error) (PutFileResult, error) {
	crashpoint.Hit("putfile-hashed")
	if err := ctx.Err(); err != nil {
		return PutFileResult{}, err
	}
	final := s.ObjectPath(ns, res.Hash)
	if err := s.ensureDir(filepath.Dir(final)); err != nil {
		return PutFileResult{}, fmt.Errorf("publish object: %w", err)
	}
	switch err := place(final); {
	case errors.Is(err, fs.ErrExist):
		res.How = "dedup"
		return res, s.dedup(final, PutOptions{Deferred: opts.Deferred})
	case err != nil:
		return PutFileResult{}, fmt.Errorf("publish object: %w", err)
	}
	crashpoint.Hit("putfile-published")
	if !opts.Deferred {
		if err := localSyncDir(filepath.Dir(final)); err != nil {
			return PutFileResult{}, err
		}
	}
	return res, nil
}

// hashFile makes src read-only and hashes it, refusing a file whose size,
// times or identity moved meanwhile (or whose size is not size, for a
// file linked as it is); it syncs the content unless opts.Deferred.
func (s *LocalStore) hashFile(ctx context.Context, src *os.File, size int64, how string, opts PutFileOptions) (PutFileResult, error) {
	if err := localMakeReadOnly(src); err != nil {
		return PutFileResult{}, err
	}
	before, err := localFileState(src)
	if err != nil {
		return PutFileResult{}, err
	}
	if before.size != size && how == "link" {
		return PutFileResult{}, fmt.Errorf("%w: %d bytes when opened, %d when linked", errFileChanged, size, before.size)
	}
	hasher := vfs.NewHasher()
	var w io.Writer = hasher
	if opts.Observe != nil {
		w = io.MultiWriter(hasher, opts.Observe)
	}
	n, err := copyBuffered(w, &cancelReader{ctx: ctx, r: vfs.NewSparseReader(src, before.size)})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return PutFileResult{}, cerr
		}
		return PutFileResult{}, fmt.Errorf("read %s: %w", src.Name(), err)
	}
	after, err := localFileState(src)
	if err != nil {
		return PutFileResult{}, err
	}
	if after != before || n != before.size {
		return PutFileResult{}, fmt.Errorf("%w while it was hashed", errFileChanged)
	}
	if !opts.Deferred {
		if err := localFdatasync(src); err != nil {
			return PutFileResult{}, fmt.Errorf("sync %s: %w", src.Name(), err)
		}
	}
	return PutFileResult{Hash: vfs.SumHash(hasher), Size: n, How: how}, nil
}

// errFileChanged is PutFile's error for a file written while it was stored.
var errFileChanged = errors.New("the file changed")

// localState is what PutFile compares before and after hashing a file: a
// write, truncation or chmod meanwhile moves one of them.
type localState struct {
	size         int64
	mtime, ctime int64
	ino          uint64
}

// localMakeReadOnly gives f mode 0444, as every object has, unless it has
// it already.
func localMakeReadOnly(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if fi.Mode().Perm() == 0o444 {
		return nil
	}
	if err := f.Chmod(0o444); err != nil {
		return fmt.Errorf("chmod %s: %w", f.Name(), err)
	}
	return nil
}
