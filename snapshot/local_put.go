package snapshot

// This file holds LocalStore.Put: content hashed in memory or streamed,
// written to a temporary file, verified, and published without replacing
// an existing object.

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
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/internal/osfile"
	"github.com/vfsd/vfsd/vfs"
)

// localSmallMax is the most content Put holds in memory: content that ends
// within it is hashed before Put creates anything, so that content already
// stored costs no file creation.
const localSmallMax = 1 << 20

// localProcFD is where Linux shows the process's descriptors; linking
// localProcFD/N with AT_SYMLINK_FOLLOW gives a name to the file open as N.
const localProcFD = "/proc/self/fd"

// LocalTempFiles says which temporary files LocalStore Puts write new
// objects to; see SetLocalTempFiles.
type LocalTempFiles int32

const (
	// LocalTempAuto, the default, uses unnamed (O_TMPFILE) files on
	// filesystems known to make an unnamed file linked into place, then
	// fsynced with its directory, as durable as a named file renamed into
	// place: XFS, Btrfs, ext4 with a journal, and tmpfs. It uses named files
	// elsewhere, notably on ext4 without a journal, where fsyncing the
	// directory does not write the linked file's link count, so that fsck
	// may remove the object after a crash.
	LocalTempAuto LocalTempFiles = iota
	// LocalTempNamed always uses named files: the fallback for filesystems
	// without O_TMPFILE.
	LocalTempNamed
	// LocalTempUnnamed uses unnamed files wherever the kernel and the
	// filesystem support O_TMPFILE, even where that is less durable. It is
	// meant for tests.
	LocalTempUnnamed
)

// localTempFiles is the setting of SetLocalTempFiles.
var localTempFiles atomic.Int32

// SetLocalTempFiles sets which temporary files LocalStore Puts that start
// after the call use, for every LocalStore, and returns the previous
// setting. It exists for tests; the default is LocalTempAuto.
func SetLocalTempFiles(t LocalTempFiles) (previous LocalTempFiles) {
	return LocalTempFiles(localTempFiles.Swap(int32(t)))
}

// Put stores r's content in ns and returns its hash and size; see Store.
//
// Put first reads up to 1 MiB of r into a pooled buffer. If r ends within
// it, Put hashes the buffer and, when the object already exists, creates no
// file: that is a dedup, after which a durable Put fdatasyncs the existing
// object (which a deferred Put may have left unsynced) and fsyncs its
// directory. Otherwise Put writes the buffer to a new temporary file. Longer
// content is streamed to a new temporary file while hashed, and checked
// against existing objects (a dedup drops the file) once hashed.
//
// The temporary file is created in tmp/ with mode 0444 (and chmodded only
// if the umask or a default ACL took bits away). Put reads it back through
// its descriptor and re-hashes it (a mismatch fails the Put and publishes
// nothing), fdatasyncs it unless opts.Deferred, and publishes it without
// replacing an object of the same name; if one has appeared, a concurrent
// Put of the same content won, and this Put is a dedup. Unless
// opts.Deferred, Put then fsyncs the object's directory.
//
// The temporary file is unnamed (O_TMPFILE), so that a crash leaves nothing
// in tmp/, and published by linking /proc/self/fd/N at the object's path
// (linkat), where the filesystem supports that and makes it durable (see
// LocalTempFiles). Elsewhere it is a named file in tmp/, closed before it
// is renamed into place (renameat2 RENAME_NOREPLACE, or a plain rename
// where the filesystem lacks that flag and the object was just seen
// missing), and OpenLocal removes those a crash leaves.
//
// A Put whose context is done while it reads or verifies content, or before
// it publishes the object, fails with the context's error and stores
// nothing; a Put is never left half-stored.
func (s *LocalStore) Put(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (vfs.Hash, int64, error) {
	const op = "put"
	if err := s.check(ctx, op, ns); err != nil {
		return vfs.Hash{}, 0, err
	}
	opts.Deferred = opts.Deferred && localDeferOK
	h, n, err := s.put(ctx, ns, r, opts)
	if err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("put %s: %w", ns, err)
	}
	return h, n, nil
}

// putBuf is Put's buffer: localSmallMax bytes and one localChunk more,
// which tells content of exactly localSmallMax bytes from longer content
// while keeping the temporary file's writes aligned to localChunk.
type putBuf [localSmallMax + localChunk]byte

// putBufs holds Put's buffers.
var putBufs = sync.Pool{New: func() any { return new(putBuf) }}

func (s *LocalStore) put(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (vfs.Hash, int64, error) {
	buf := putBufs.Get().(*putBuf)
	defer putBufs.Put(buf)
	cr := &cancelReader{ctx: ctx, r: r}
	filled, err := io.ReadFull(cr, buf[:])
	ended := err == io.EOF || err == io.ErrUnexpectedEOF // r ended within buf
	if err != nil && !ended {
		return vfs.Hash{}, 0, putReadErr(ctx, cr, err)
	}
	small := ended && filled <= localSmallMax

	var h vfs.Hash
	var final string
	if small {
		h = vfs.HashOf(buf[:filled])
		final = s.ObjectPath(ns, h)
		if exists, err := localExists(final); err != nil {
			return vfs.Hash{}, 0, err
		} else if exists {
			return h, int64(filled), s.dedup(final, opts)
		}
		if err := ctx.Err(); err != nil {
			return vfs.Hash{}, 0, err
		}
	}

	spread := rand.IntN(256) // streamed content: its hash is not known yet
	if small {
		spread = int(h[0])
	}
	tmp, err := s.createTemp(spread)
	if err != nil {
		return vfs.Hash{}, 0, err
	}
	defer tmp.discard()
	n := int64(filled)
	// Runs of zeros become holes: a sparse file costs the store what its
	// data does, not its size.
	sw := vfs.NewSparseWriter(tmp.f)
	if small {
		if _, err := sw.Write(buf[:filled]); err != nil {
			return vfs.Hash{}, 0, fmt.Errorf("write %s: %w", tmp, err)
		}
	} else {
		// Write and hash in chunks that stay in the CPU cache between the
		// two: the buffer, then the rest of r.
		hasher := vfs.NewHasher()
		w := io.MultiWriter(sw, hasher)
		for off := 0; off < filled; off += localChunk {
			if _, err := w.Write(buf[off:min(off+localChunk, filled)]); err != nil {
				return vfs.Hash{}, 0, fmt.Errorf("write %s: %w", tmp, err)
			}
		}
		if !ended {
			m, err := copyBuffered(w, cr)
			if err != nil {
				if cr.failed == nil && ctx.Err() == nil {
					return vfs.Hash{}, 0, fmt.Errorf("write %s: %w", tmp, err)
				}
				return vfs.Hash{}, 0, putReadErr(ctx, cr, err)
			}
			n += m
		}
		h = vfs.SumHash(hasher)
		final = s.ObjectPath(ns, h)
		if exists, err := localExists(final); err != nil {
			return vfs.Hash{}, 0, err
		} else if exists {
			return h, n, s.dedup(final, opts)
		}
	}
	if err := sw.Finish(); err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("write %s: %w", tmp, err)
	}

	switch won, err := s.publish(ctx, tmp, final, h, n, opts); {
	case err != nil:
		return vfs.Hash{}, 0, err
	case !won:
		// A concurrent Put of the same content won.
		return h, n, s.dedup(final, opts)
	}
	if !opts.Deferred {
		if err := localSyncDir(filepath.Dir(final)); err != nil {
			return vfs.Hash{}, 0, err
		}
	}
	return h, n, nil
}

// putReadErr reports a failure to read a Put's content: the context's error
// if it is done, else the reader's.
func putReadErr(ctx context.Context, cr *cancelReader, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if cr.failed != nil {
		err = cr.failed
	}
	return fmt.Errorf("read content: %w", err)
}

// localExists reports whether path exists (lstat).
func localExists(path string) (bool, error) {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
}

// localTemp is the temporary file of a Put.
type localTemp struct {
	f    *os.File // nil once closed
	name string   // the path of a named temporary file; "" for an unnamed one
	kept bool     // the named file was renamed into place
}

func (t *localTemp) String() string {
	if t.name == "" {
		return "unnamed temporary file"
	}
	return t.name
}

// discard closes the file, and removes it if it is named and unpublished (an
// unnamed file vanishes with its descriptor unless linked).
func (t *localTemp) discard() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if t.name != "" && !t.kept {
		os.Remove(t.name)
	}
}

// createTemp creates a Put's temporary file in tmp/xx/ (xx the hex form of
// spread: Puts running at once create files in different directories
// rather than queueing on one directory's lock), with mode 0444 and
// open for reading and writing: unnamed where the store uses O_TMPFILE and
// the filesystem takes it, else named.
func (s *LocalStore) createTemp(spread int) (*localTemp, error) {
	dir := s.tmpSub(spread)
	var unnamed bool
	switch LocalTempFiles(localTempFiles.Load()) {
	case LocalTempAuto:
		unnamed = s.tmpfileSafe && s.tmpfileOK.Load()
	case LocalTempUnnamed:
		unnamed = s.tmpfileOK.Load()
	}
	if err := s.ensureDir(dir); err != nil {
		return nil, fmt.Errorf("create temporary directory: %w", err)
	}
	if unnamed {
		f, err := localOpenTmpfile(dir)
		switch {
		case err == nil:
			return &localTemp{f: f}, nil
		case errors.Is(err, errors.ErrUnsupported):
			s.tmpfileOK.Store(false)
		default:
			return nil, fmt.Errorf("create temporary file: %w", err)
		}
	}
	for range 10000 {
		name := filepath.Join(dir, "put-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := osfile.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o444)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create temporary file: %w", err)
		}
		return &localTemp{f: f, name: name}, nil
	}
	return nil, fmt.Errorf("create temporary file in %s: too many name collisions", dir)
}

// publish verifies a Put's temporary file, which must hold n bytes hashing
// to h, makes it durable unless opts.Deferred, and publishes it at final.
// It returns false, and no error, if final exists.
func (s *LocalStore) publish(ctx context.Context, tmp *localTemp, final string, h vfs.Hash, n int64, opts PutOptions) (bool, error) {
	// The mode given at creation is subject to the umask (and a default
	// ACL): correct it if it is not what objects have.
	fi, err := tmp.f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", tmp, err)
	}
	if fi.Mode().Perm() != 0o444 {
		if err := tmp.f.Chmod(0o444); err != nil {
			return false, fmt.Errorf("chmod %s: %w", tmp, err)
		}
	}
	if fi.Size() != n {
		return false, fmt.Errorf("verify after write: %s: %w: want %d bytes, found %d", tmp, ErrCorruptObject, n, fi.Size())
	}
	// Read the written file back before publishing it, so that a bad object
	// is never visible (and no concurrent Put deduplicates against one):
	// pread from offset 0 to the end, which the writes did not go through,
	// holes as zeros without reading them.
	whole := vfs.NewSparseReader(tmp.f, n)
	if err := localVerify(ctx, whole, tmp.String(), h, n); err != nil {
		return false, fmt.Errorf("verify after write: %w", err)
	}
	if !opts.Deferred {
		if err := localFdatasync(tmp.f); err != nil {
			return false, fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := s.ensureDir(filepath.Dir(final)); err != nil {
		return false, fmt.Errorf("publish object: %w", err)
	}
	if tmp.name == "" {
		// The object is published by a link to this very inode.
		err = localLinkFile(tmp.f, final)
	} else {
		// The object is published by a rename of this very inode.
		err = tmp.f.Close()
		tmp.f = nil
		if err != nil {
			return false, fmt.Errorf("close %s: %w", tmp, err)
		}
		err = localRenameNoReplace(tmp.name, final)
		tmp.kept = err == nil
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("publish object: %w", err)
	}
	return true, nil
}

// dedup handles a Put of content that is already stored. A durable Put syncs
// the existing object and its directory entry, which a deferred Put may have
// left unsynced.
func (s *LocalStore) dedup(final string, opts PutOptions) error {
	if opts.Deferred || !localDeferOK { // without deferral every object was synced when put
		return nil
	}
	f, err := osfile.Open(final)
	if err != nil {
		return fmt.Errorf("sync existing object: %w", err)
	}
	err = localFdatasync(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("sync existing object %s: %w", final, err)
	}
	return localSyncDir(filepath.Dir(final))
}

// localVerify reads r, the content of the file named what, to its end and
// checks that it is n bytes hashing to want.
func localVerify(ctx context.Context, r io.Reader, what string, want vfs.Hash, n int64) error {
	hasher := vfs.NewHasher()
	m, err := copyBuffered(hasher, &cancelReader{ctx: ctx, r: r})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("read %s: %w", what, err)
	}
	if got := vfs.SumHash(hasher); got != want || m != n {
		return fmt.Errorf("%s: %w: want %s (%d bytes), read %s (%d bytes)", what, ErrCorruptObject, want, n, got, m)
	}
	return nil
}

// localChunk is the size of the reads and writes that stream content.
const localChunk = 64 << 10

// copyBufs holds the buffers of copyBuffered.
var copyBufs = sync.Pool{New: func() any { return new([localChunk]byte) }}

// copyBuffered is io.Copy with a pooled 64 KiB buffer (used as long as src
// is not an io.WriterTo and dst not an io.ReaderFrom, as with cancelReader).
func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[localChunk]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(dst, src, buf[:])
}

// cancelReader fails reads once its context is done, and records the
// underlying reader's last error other than io.EOF.
type cancelReader struct {
	ctx    context.Context
	r      io.Reader
	failed error
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		c.failed = err
	}
	return n, err
}
