package mount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsd/vfsd/vfs"
)

// DefaultCacheTimeout is how long the kernel may trust entries and
// attributes without asking; invalidation keeps it correct.
const DefaultCacheTimeout = time.Hour

// Options configure a mount.
type Options struct {
	// ReadOnly refuses every change (EROFS).
	ReadOnly bool
	// AllowOther lets users other than the mounting one in (needs
	// user_allow_other in /etc/fuse.conf when not root). It always
	// implies DefaultPermissions: the FUSE server checks no permissions
	// itself, so without the kernel's checks any user could read, write
	// and chmod every file.
	AllowOther bool
	// DefaultPermissions has the kernel check permission bits and
	// ownership (as for a local file system) before it asks the server.
	DefaultPermissions bool
	// UID and GID own every file; the mounting process's when zero.
	UID, GID uint32
	// Debug logs every FUSE request to stderr.
	Debug bool
	// CacheTimeout is the kernel's entry and attribute cache lifetime;
	// DefaultCacheTimeout when zero.
	CacheTimeout time.Duration
	// Passthrough lets the kernel serve read-only opens from the backing
	// file (FUSE passthrough) where it supports that (Linux 6.9+, as
	// root). It is off by default, and NoPassthrough keeps it off: the
	// kernel pins one backing file per inode while any passthrough open
	// lasts, so with it a file opened for writing while it is open for
	// reading (or the reverse) fails with EIO, and opens that overlap one
	// made before a tool rewrote the file read the old content.
	Passthrough   bool
	NoPassthrough bool
	// FsName is the source name shown in /proc/mounts; "vfsd:<session>"
	// when empty.
	FsName string
}

// Mount is a session served at a directory.
type Mount struct {
	s      *vfs.Session
	dir    string
	opts   Options
	uid    uint32
	gid    uint32
	origin string
	root   *node
	server *fuse.Server
	cancel func()

	unmountOnce sync.Once
	unmountErr  error
}

var mountSeq atomic.Uint64

// New mounts session s at dir, which must be an existing directory. As
// root it mounts directly (mount(2)); otherwise through fusermount3.
func New(s *vfs.Session, dir string, opts Options) (*Mount, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("mount %s: not a directory", dir)
	}
	if opts.CacheTimeout <= 0 {
		opts.CacheTimeout = DefaultCacheTimeout
	}
	opts.Passthrough = opts.Passthrough && !opts.NoPassthrough
	// Other users are held to the files' permission bits by the kernel:
	// the server itself checks none.
	opts.DefaultPermissions = opts.DefaultPermissions || opts.AllowOther
	m := &Mount{s: s, dir: dir, opts: opts, uid: opts.UID, gid: opts.GID,
		origin: fmt.Sprintf("fuse:%d:%s", mountSeq.Add(1), dir)}
	if m.uid == 0 && m.gid == 0 {
		m.uid, m.gid = uint32(os.Getuid()), uint32(os.Getgid())
	}
	rootNode, err := s.Stat(context.Background(), vfs.Root)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m.root = &node{m: m}
	fsName := opts.FsName
	if fsName == "" {
		fsName = "vfsd:" + s.ID()
	}
	var mountOpts []string
	if opts.DefaultPermissions {
		mountOpts = append(mountOpts, "default_permissions")
	}
	if opts.ReadOnly {
		mountOpts = append(mountOpts, "ro")
	}
	timeout := opts.CacheTimeout
	negative := time.Duration(0) // a name others create must show up at once
	fo := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:   opts.AllowOther,
			FsName:       fsName,
			Name:         "vfsd",
			Debug:        opts.Debug,
			DirectMount:  os.Geteuid() == 0,
			Options:      mountOpts,
			MaxWrite:     1 << 20,
			MaxReadAhead: 1 << 20,
			EnableLocks:  false,
			// No extended attributes: ENOSYS makes the kernel answer
			// EOPNOTSUPP itself from then on, as programs expect of a
			// filesystem without them (go-fuse's default, ENODATA, made
			// setxattr fail as if the attribute were missing), and spares
			// a security.capability lookup on every write.
			DisableXAttrs:            true,
			ExplicitDataCacheControl: true,
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &negative,
		UID:             m.uid,
		GID:             m.gid,
		RootStableAttr:  &gofs.StableAttr{Ino: rootNode.Ino, Mode: syscall.S_IFDIR},
	}
	server, err := gofs.Mount(dir, m.root, fo)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w (is /dev/fuse available, and fuse3 installed?)", dir, err)
	}
	m.server = server
	m.cancel = s.Subscribe(m.invalidate)
	return m, nil
}

// Dir returns the mount point.
func (m *Mount) Dir() string { return m.dir }

// Origin is the origin (vfs.WithOrigin) of the changes made through the
// mount.
func (m *Mount) Origin() string { return m.origin }

// ctx tags ctx with the mount's origin, and relaxes durability: POSIX
// promises it only on fsync, which syncs (see the vfs package).
func (m *Mount) ctx(ctx context.Context) context.Context {
	return vfs.Relaxed(vfs.WithOrigin(ctx, m.origin))
}

// Wait blocks until the mount is unmounted.
func (m *Mount) Wait() { m.server.Wait() }

// Unmount unmounts; if the mount is busy (open files, a process's working
// directory) it detaches it lazily, so it goes away when released. Safe to
// call more than once.
func (m *Mount) Unmount() error {
	m.unmountOnce.Do(func() {
		m.cancel()
		err := m.server.Unmount()
		if err != nil && errors.Is(err, syscall.EBUSY) || err != nil {
			if lerr := syscall.Unmount(m.dir, syscall.MNT_DETACH); lerr == nil {
				err = nil
			}
		}
		m.unmountErr = err
	})
	return m.unmountErr
}
