package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// LocalFormat is the format a LocalStore records in its marker file.
const LocalFormat = "vfsd-store/1"

// localMarker is the name of the marker file at the root of a LocalStore.
const localMarker = "store.json"

// localTmp is the directory under the store root that holds objects being
// written; it is on the same filesystem as the objects, so a finished object
// is published by a rename.
const localTmp = "tmp"

// ErrCorruptObject is matched (errors.Is) by errors reporting an object
// whose content does not hash to its name.
var ErrCorruptObject = errors.New("object content does not match its hash")

// LocalStore is a Store in a local directory. Its layout is
//
//	<dir>/store.json                     {"format":"vfsd-store/1"}
//	<dir>/<namespace>/<xx>/<64 hex>      one read-only (0444) file per object,
//	                                     xx being the hash's first two hex digits
//	<dir>/tmp/                           objects being written
//
// Put streams content into tmp/ while hashing it, reads the file back to
// verify it, and renames it into place without replacing an existing object.
// Unless the Put is deferred, the file and its directory are fsynced before
// Put returns. Objects are never opened for writing.
//
// A LocalStore holds an exclusive lock (flock) on its directory from
// OpenLocal to Close, so that one process at a time uses it: OpenLocal clears
// tmp/ of crash leftovers, which would break another process's Puts. A
// LocalStore is safe for concurrent use by goroutines.
type LocalStore struct {
	dir    string
	tmpDir string

	// mu guards root against Close while Sync uses it.
	mu     sync.RWMutex
	root   *os.File // the store directory, locked; used for Syncfs
	closed atomic.Bool
}

var _ Store = (*LocalStore)(nil)

type localMarkerFile struct {
	Format string `json:"format"`
}

// OpenLocal opens the store in dir, creating dir and an empty store if dir
// does not exist or is empty. It refuses a non-empty directory that is not a
// store (no valid store.json marker), a store of another format, and a store
// that another process has open. Leftover temporary files of an earlier
// crash are removed.
func OpenLocal(dir string) (*LocalStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	root, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			root.Close()
		}
	}()
	if err := localLockDir(root); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := localCheckOrCreateMarker(dir, root); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &LocalStore{dir: dir, tmpDir: filepath.Join(dir, localTmp), root: root}
	if err := s.makeDirs(); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := s.clearTmp(); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	ok = true
	return s, nil
}

// localLockDir takes an exclusive, non-blocking flock on the open directory; the
// lock lasts until the file is closed.
func localLockDir(root *os.File) error {
	rc, err := root.SyscallConn()
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return errors.New("store is in use by another process (or another LocalStore in this one)")
	}
	if lerr != nil {
		return fmt.Errorf("lock: %w", lerr)
	}
	return nil
}

// localCheckOrCreateMarker validates dir's store.json, or writes one when dir is
// empty (durably, before anything else is created, so that a crash during
// initialisation leaves a store the next open completes).
func localCheckOrCreateMarker(dir string, root *os.File) error {
	path := filepath.Join(dir, localMarker)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var m localMarkerFile
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("invalid marker %s: %w", path, err)
		}
		if m.Format != LocalFormat {
			return fmt.Errorf("marker %s: unsupported store format %q (want %q)", path, m.Format, LocalFormat)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read marker: %w", err)
	}
	tmp := path + ".tmp" // a leftover of an interrupted creation is ignored
	names, err := root.Readdirnames(8)
	if _, serr := root.Seek(0, io.SeekStart); serr != nil && err == nil {
		err = serr
	}
	if err != nil && err != io.EOF {
		return fmt.Errorf("read directory: %w", err)
	}
	for _, name := range names {
		if name != localMarker+".tmp" {
			return fmt.Errorf("not a vfsd store: directory is not empty and has no %s (found %q)", localMarker, name)
		}
	}
	data, err = json.Marshal(localMarkerFile{Format: LocalFormat})
	if err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	data = append(data, '\n')
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := localWriteFileSync(tmp, data, 0o444); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	if err := root.Sync(); err != nil {
		return fmt.Errorf("write marker: sync %s: %w", dir, err)
	}
	return nil
}

func localWriteFileSync(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// makeDirs creates tmp/ and every namespace's 256 fan-out directories that
// are missing, so that Put never creates directories, and fsyncs the parents
// of whatever it created.
func (s *LocalStore) makeDirs() error {
	created, err := localMkdirIfMissing(s.tmpDir)
	if err != nil {
		return err
	}
	rootDirty := created
	for _, ns := range Namespaces {
		nsDir := filepath.Join(s.dir, string(ns))
		created, err := localMkdirIfMissing(nsDir)
		if err != nil {
			return err
		}
		rootDirty = rootDirty || created
		nsDirty := false
		for i := range 256 {
			created, err := localMkdirIfMissing(filepath.Join(nsDir, fmt.Sprintf("%02x", i)))
			if err != nil {
				return err
			}
			nsDirty = nsDirty || created
		}
		if nsDirty {
			if err := localSyncDir(nsDir); err != nil {
				return err
			}
		}
	}
	if rootDirty {
		if err := s.root.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", s.dir, err)
		}
	}
	return nil
}

func localMkdirIfMissing(path string) (created bool, err error) {
	err = os.Mkdir(path, 0o700)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		fi, serr := os.Stat(path)
		if serr == nil && fi.IsDir() {
			return false, nil
		}
		if serr == nil {
			return false, fmt.Errorf("%s exists and is not a directory", path)
		}
		return false, serr
	}
	return false, err
}

// clearTmp removes everything in tmp/: files there belong to Puts that never
// finished, and the directory lock guarantees none is running.
func (s *LocalStore) clearTmp() error {
	entries, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return fmt.Errorf("clear temporary files: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.tmpDir, e.Name())); err != nil {
			return fmt.Errorf("clear temporary files: %w", err)
		}
	}
	return nil
}

// Dir returns the store's directory (absolute).
func (s *LocalStore) Dir() string { return s.dir }

// ObjectPath returns the path of the file that holds (or would hold) the
// object h in ns. The file must never be written to.
func (s *LocalStore) ObjectPath(ns Namespace, h vfs.Hash) string {
	hx := h.String()
	return filepath.Join(s.dir, string(ns), hx[:2], hx)
}

// check fails for a closed store, a done context and an unknown namespace.
func (s *LocalStore) check(ctx context.Context, op string, ns Namespace) error {
	if s.closed.Load() {
		return storeClosedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, ns, err)
	}
	return checkStoreNamespace(op, ns)
}

// Put stores r's content in ns and returns its hash and size; see Store.
// The content is written to a temporary file while hashed. If the object
// already exists the temporary file is dropped (a durable Put then syncs the
// existing object, which may come from a deferred Put). Otherwise the file
// is made read-only, fdatasynced unless opts.Deferred, read back through a
// fresh descriptor and re-hashed (a mismatch fails the Put and stores
// nothing), renamed into place without replacing an object of the same name,
// and its directory is fsynced unless opts.Deferred. A Put whose context is
// done while it reads or verifies content fails with the context's error and
// stores nothing; a Put is never left half-stored.
func (s *LocalStore) Put(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (vfs.Hash, int64, error) {
	const op = "put"
	if err := s.check(ctx, op, ns); err != nil {
		return vfs.Hash{}, 0, err
	}
	h, n, err := s.put(ctx, ns, r, opts)
	if err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("put %s: %w", ns, err)
	}
	return h, n, nil
}

func (s *LocalStore) put(ctx context.Context, ns Namespace, r io.Reader, opts PutOptions) (vfs.Hash, int64, error) {
	tmp, err := os.CreateTemp(s.tmpDir, "put-*")
	if err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("create temporary file: %w", err)
	}
	tmpName := tmp.Name()
	published := false
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		if !published {
			os.Remove(tmpName)
		}
	}()

	hasher := vfs.NewHasher()
	n, err := copyBuffered(io.MultiWriter(tmp, hasher), &cancelReader{ctx: ctx, r: r})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return vfs.Hash{}, 0, cerr
		}
		return vfs.Hash{}, 0, fmt.Errorf("write %s: %w", tmpName, err)
	}
	h := vfs.SumHash(hasher)

	final := s.ObjectPath(ns, h)
	if _, err := os.Lstat(final); err == nil {
		return h, n, s.dedup(final, opts)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return vfs.Hash{}, 0, fmt.Errorf("stat %s: %w", final, err)
	}
	if err := ctx.Err(); err != nil {
		return vfs.Hash{}, 0, err
	}
	if err := tmp.Chmod(0o444); err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("chmod %s: %w", tmpName, err)
	}
	if !opts.Deferred {
		if err := localFdatasync(tmp); err != nil {
			return vfs.Hash{}, 0, fmt.Errorf("sync %s: %w", tmpName, err)
		}
	}
	err = tmp.Close()
	tmp = nil
	if err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("close %s: %w", tmpName, err)
	}
	// Read the written file back before publishing it, so that a bad object
	// is never visible (and no concurrent Put deduplicates against one).
	// The object is published by a rename of this very inode.
	if err := localVerifyFile(ctx, tmpName, h, n); err != nil {
		return vfs.Hash{}, 0, fmt.Errorf("verify after write: %w", err)
	}
	switch err := localRenameNoReplace(tmpName, final); {
	case errors.Is(err, fs.ErrExist):
		// A concurrent Put of the same content won.
		return h, n, s.dedup(final, opts)
	case err != nil:
		return vfs.Hash{}, 0, fmt.Errorf("publish object: %w", err)
	}
	published = true
	if !opts.Deferred {
		if err := localSyncDir(filepath.Dir(final)); err != nil {
			return vfs.Hash{}, 0, err
		}
	}
	return h, n, nil
}

// dedup handles a Put of content that is already stored. A durable Put syncs
// the existing object and its directory entry, which a deferred Put may have
// left unsynced.
func (s *LocalStore) dedup(final string, opts PutOptions) error {
	if opts.Deferred {
		return nil
	}
	f, err := os.Open(final)
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

// localRenameNoReplace renames from to to, failing with an error matching
// fs.ErrExist if to exists. Where the filesystem lacks RENAME_NOREPLACE it
// falls back to a plain rename (the caller has just checked that to is
// missing; at worst identical content replaces identical content).
func localRenameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case err == unix.EEXIST:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	case err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP:
		return os.Rename(from, to)
	default:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
}

// localVerifyFile re-reads path through a fresh descriptor and checks that it
// holds n bytes hashing to want.
func localVerifyFile(ctx context.Context, path string, want vfs.Hash, n int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	hasher := vfs.NewHasher()
	m, err := copyBuffered(hasher, &cancelReader{ctx: ctx, r: f})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	if got := vfs.SumHash(hasher); got != want || m != n {
		return fmt.Errorf("%s: %w: want %s (%d bytes), read %s (%d bytes)", path, ErrCorruptObject, want, n, got, m)
	}
	return nil
}

// Open returns a read-only reader for an object; the value also implements
// vfs.FileBlob. A missing object is an error matching vfs.ErrNotFound. Open
// does not verify the content (Put verified it when writing; see Verify).
func (s *LocalStore) Open(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	const op = "open"
	if err := s.check(ctx, op, ns); err != nil {
		return nil, err
	}
	f, err := os.Open(s.ObjectPath(ns, h))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, objectNotFound(op, ns, h)
		}
		return nil, fmt.Errorf("open %s object: %w", ns, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s object: %w", ns, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s object %s: not a regular file", ns, f.Name())
	}
	return &fileBlob{f: f, size: fi.Size()}, nil
}

// Stat returns an object's size, or an error matching vfs.ErrNotFound.
func (s *LocalStore) Stat(ctx context.Context, ns Namespace, h vfs.Hash) (int64, error) {
	const op = "stat"
	if err := s.check(ctx, op, ns); err != nil {
		return 0, err
	}
	fi, err := os.Lstat(s.ObjectPath(ns, h))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, objectNotFound(op, ns, h)
		}
		return 0, fmt.Errorf("stat %s object: %w", ns, err)
	}
	return fi.Size(), nil
}

// Delete removes an object; a missing object is not an error. The removal
// is durable after the next Sync. Readers that have the object open keep
// reading it.
func (s *LocalStore) Delete(ctx context.Context, ns Namespace, h vfs.Hash) error {
	const op = "delete"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	if err := os.Remove(s.ObjectPath(ns, h)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s object: %w", ns, err)
	}
	return nil
}

// List calls fn for every object in ns, fan-out directory by fan-out
// directory, until fn returns an error, which List returns unwrapped. Files
// whose names are not hashes are skipped, as are objects deleted while List
// runs.
func (s *LocalStore) List(ctx context.Context, ns Namespace, fn func(h vfs.Hash, size int64) error) error {
	const op = "list"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	nsDir := filepath.Join(s.dir, string(ns))
	for i := range 256 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %s: %w", ns, err)
		}
		prefix := fmt.Sprintf("%02x", i)
		if err := s.listDir(filepath.Join(nsDir, prefix), prefix, fn); err != nil {
			return err
		}
	}
	return nil
}

func (s *LocalStore) listDir(dir, prefix string, fn func(vfs.Hash, int64) error) error {
	d, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("list: %w", err)
	}
	defer d.Close()
	for {
		entries, err := d.ReadDir(1024)
		for _, e := range entries {
			name := e.Name()
			if len(name) != 2*vfs.HashSize || name[:2] != prefix || !e.Type().IsRegular() {
				continue
			}
			h, perr := vfs.ParseHash(name)
			if perr != nil || h.String() != name { // uppercase hex is not ours
				continue
			}
			fi, ierr := e.Info()
			if ierr != nil {
				if errors.Is(ierr, fs.ErrNotExist) {
					continue
				}
				return fmt.Errorf("list: %w", ierr)
			}
			if ferr := fn(h, fi.Size()); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
	}
}

// Verify re-reads an object and checks that its content hashes to its name.
// A mismatch is an error matching ErrCorruptObject; a missing object one
// matching vfs.ErrNotFound.
func (s *LocalStore) Verify(ctx context.Context, ns Namespace, h vfs.Hash) error {
	const op = "verify"
	if err := s.check(ctx, op, ns); err != nil {
		return err
	}
	path := s.ObjectPath(ns, h)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return objectNotFound(op, ns, h)
		}
		return fmt.Errorf("verify %s object: %w", ns, err)
	}
	defer f.Close()
	hasher := vfs.NewHasher()
	if _, err := copyBuffered(hasher, &cancelReader{ctx: ctx, r: f}); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("verify %s object %s: %w", ns, h, cerr)
		}
		return fmt.Errorf("verify %s object: read %s: %w", ns, path, err)
	}
	if got := vfs.SumHash(hasher); got != h {
		return fmt.Errorf("verify %s object %s: %w (content hashes to %s)", ns, h, ErrCorruptObject, got)
	}
	return nil
}

// Sync makes every object stored so far durable, deferred Puts and Deletes
// included, by syncing the store's whole filesystem (syncfs(2)).
func (s *LocalStore) Sync(ctx context.Context) error {
	const op = "sync"
	if s.closed.Load() {
		return storeClosedErr(op)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sync store: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.root == nil {
		return storeClosedErr(op)
	}
	rc, err := s.root.SyscallConn()
	if err != nil {
		return fmt.Errorf("sync store %s: %w", s.dir, err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return fmt.Errorf("sync store %s: %w", s.dir, err)
	}
	if serr != nil {
		return fmt.Errorf("sync store %s: syncfs: %w", s.dir, serr)
	}
	return nil
}

// Bytes returns the total size of the objects in every namespace.
func (s *LocalStore) Bytes(ctx context.Context) (int64, error) {
	var total int64
	for _, ns := range Namespaces {
		err := s.List(ctx, ns, func(_ vfs.Hash, size int64) error {
			total += size
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("store size: %w", err)
		}
	}
	return total, nil
}

// Close releases the store's directory lock. Later calls fail with an
// error matching vfs.ErrClosed, except Close, which returns nil; readers
// already open stay usable.
func (s *LocalStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.root.Close()
	s.root = nil
	if err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	return nil
}

// fileBlob is an object opened read-only.
type fileBlob struct {
	f    *os.File
	size int64
}

var _ vfs.FileBlob = (*fileBlob)(nil)

func (b *fileBlob) ReadAt(p []byte, off int64) (int, error) { return b.f.ReadAt(p, off) }
func (b *fileBlob) Size() int64                             { return b.size }
func (b *fileBlob) File() *os.File                          { return b.f }
func (b *fileBlob) Close() error                            { return b.f.Close() }

func localFdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

func localSyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// copyBufs holds the buffers of copyBuffered.
var copyBufs = sync.Pool{New: func() any { return new([64 << 10]byte) }}

// copyBuffered is io.Copy with a pooled 64 KiB buffer (used as long as src
// is not an io.WriterTo and dst not an io.ReaderFrom, as with cancelReader).
func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[64 << 10]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(dst, src, buf[:])
}

// cancelReader fails reads once its context is done.
type cancelReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// checkStoreNamespace fails for a namespace that is not in Namespaces.
func checkStoreNamespace(op string, ns Namespace) error {
	for _, n := range Namespaces {
		if ns == n {
			return nil
		}
	}
	return &vfs.Error{Op: op, Path: string(ns), Code: vfs.CodeInvalid, Msg: "unknown store namespace"}
}

func objectNotFound(op string, ns Namespace, h vfs.Hash) error {
	return &vfs.Error{Op: op + " " + objectNoun(ns), Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such object"}
}

func storeClosedErr(op string) error {
	return &vfs.Error{Op: op, Code: vfs.CodeClosed, Msg: "store is closed"}
}

// objectNoun names one object of ns in error messages.
func objectNoun(ns Namespace) string {
	switch ns {
	case Blobs:
		return "blob"
	case Records:
		return "snapshot record"
	}
	return string(ns) + " object"
}
