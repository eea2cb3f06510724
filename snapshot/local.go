package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/internal/osfile"
	"github.com/vfsd/vfsd/vfs"
)

// LocalFormat is the format a LocalStore records in its marker file.
const LocalFormat = "vfsd-store/1"

// localTmp is the directory under the store root in which Put creates the
// files of objects being written; it is on the same filesystem as the
// objects, so a finished file is published by a link (or a rename).
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
// Put hashes content of up to 1 MiB in memory and does nothing more if the
// object exists. It writes new content (streaming and hashing content over
// 1 MiB) to a new read-only temporary file in tmp/, reads the file back to
// verify it, and publishes it without replacing an existing object: by
// linking it into place if it is an unnamed (O_TMPFILE) file, which Put
// uses on filesystems where that is as durable as a rename (see
// LocalTempFiles), else by renaming it. Unless the Put is deferred, the file
// and its directory are fsynced before Put returns. Published objects are
// never opened for writing.
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

	// tmpfileOK is whether Put can create and link unnamed temporary files:
	// false if /proc is missing, or once the filesystem has refused
	// O_TMPFILE. tmpfileSafe is whether the filesystem makes a linked
	// unnamed file as durable as a renamed named one (localTmpfileSafe).
	tmpfileOK   atomic.Bool
	tmpfileSafe bool
	// cloneOK is cleared once the store's filesystem refused FICLONE:
	// PutFile then copies without creating a temporary file in vain for
	// every file. Per store: another store of the process may be on a
	// filesystem that shares extents.
	cloneOK atomic.Bool
	// dirs holds the fan-out directories known to exist (see ensureDir).
	dirs sync.Map
}

var _ Store = (*LocalStore)(nil)

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
	root, err := localOpenDir(dir)
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
	// Without /proc an unnamed file cannot be linked into place.
	_, err = os.Stat(localProcFD)
	s.tmpfileOK.Store(err == nil)
	s.cloneOK.Store(true)
	s.tmpfileSafe = localTmpfileSafe(s.tmpDir)
	ok = true
	return s, nil
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

// Open returns a read-only reader for an object; the value also implements
// vfs.FileBlob. A missing object is an error matching vfs.ErrNotFound. Open
// does not verify the content (Put verified it when writing; see Verify).
func (s *LocalStore) Open(ctx context.Context, ns Namespace, h vfs.Hash) (vfs.Blob, error) {
	const op = "open"
	if err := s.check(ctx, op, ns); err != nil {
		return nil, err
	}
	f, err := osfile.Open(s.ObjectPath(ns, h))
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
	f, err := osfile.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return objectNotFound(op, ns, h)
		}
		return fmt.Errorf("verify %s object: %w", ns, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("verify %s object: %w", ns, err)
	}
	hasher := vfs.NewHasher()
	if _, err := copyBuffered(hasher, &cancelReader{ctx: ctx, r: vfs.NewSparseReader(f, fi.Size())}); err != nil {
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
	if err := localSyncfs(s.root); err != nil {
		return fmt.Errorf("sync store %s: %w", s.dir, err)
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
