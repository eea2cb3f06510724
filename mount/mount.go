//go:build linux

package mount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// Mount is a session served at a directory.
type Mount struct {
	s      *vfs.Session
	dir    string
	opts   Options
	ids    idMap
	origin string
	root   *node
	server *fuse.Server
	cancel func()
	fills  fillStates // see fillCache
	// releaseReaders ends the server's count in the reader cap (see
	// withReaderCap).
	releaseReaders func()

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
	// Callers are held to the files' owners and modes by the kernel: the
	// server itself checks none.
	opts.DefaultPermissions = !opts.NoDefaultPermissions || opts.AllowOther
	m := &Mount{s: s, dir: dir, opts: opts, ids: newIDMap(s.DefaultOwner(), opts.UID, opts.GID),
		origin: fmt.Sprintf("fuse:%d:%s", mountSeq.Add(1), dir)}
	rootNode, err := s.Stat(context.Background(), vfs.Root)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m.root = &node{m: m}
	fsName := opts.FsName
	if fsName == "" {
		fsName = "vfsd:" + s.ID()
	}
	// nosuid and nodev are go-fuse's and fusermount3's defaults; said here
	// so that no change of theirs can drop them, and lifted only when asked.
	mountOpts := []string{"nosuid", "nodev"}
	if opts.AllowSetID {
		mountOpts[0] = "suid"
	}
	if opts.AllowDevices {
		mountOpts[1] = "dev"
	}
	if opts.DefaultPermissions {
		mountOpts = append(mountOpts, "default_permissions")
	}
	if opts.ReadOnly {
		mountOpts = append(mountOpts, "ro")
	}
	timeout := opts.CacheTimeout
	// Names found missing are cached as long (node's module resolution,
	// compilers' include paths and git probe the same missing names again
	// and again): a name a tool, another mount or a restore creates drops
	// the kernel's entry (see invalidate).
	negative := timeout
	if opts.NoNegativeCache {
		negative = 0
	}
	direct := os.Geteuid() == 0 // mount(2) ourselves; else fusermount3
	fo := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:        opts.AllowOther,
			FsName:            fsName,
			Name:              "vfsd",
			Debug:             opts.Debug,
			DirectMountStrict: direct,
			Options:           mountOpts,
			MaxWrite:          1 << 20,
			MaxReadAhead:      1 << 20,
			// Locks are the kernel's (no FUSE lock requests): its local
			// lock manager gives POSIX record locks their exact semantics
			// (per process, F_SETLKW waits and detects deadlocks, signals
			// interrupt it), open-file-description locks (F_OFD_*) and
			// flock(2) per open file description, for every process on
			// this host. Served by vfsd they would be no more correct and
			// cost a round trip each; only mounts of one session at two
			// directories do not see each other's locks.
			EnableLocks: false,
			// Extended attributes are served (user., trusted., security.);
			// suid/sgid are killed by the kernel sending a chmod on write,
			// truncate and chown (no handle_killpriv negotiated).
			ExplicitDataCacheControl: true,
			EnableSymlinkCaching:     opts.SymlinkCaching,
			IgnoreSecurityLabels:     opts.IgnoreSecurityLabels,

			// Replies to READ carry bytes, never a file to splice from:
			// go-fuse would write each reply's header into a pipe first
			// and then drain it again, two system calls a READ for nothing.
			DisableSplice: !opts.Splice,

			DisableReadDirPlus: opts.NoReaddirPlus,
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &negative,
		// Mode 0 is mode 0 (go-fuse would show 0644/0755 instead).
		NullPermissions: true,
		RootStableAttr:  &gofs.StableAttr{Ino: rootNode.Ino, Mode: syscall.S_IFDIR},
	}
	if opts.Writeback {
		fo.MountOptions.ExtraCapabilities |= fuse.CAP_WRITEBACK_CACHE
	}
	var server *fuse.Server
	release := func() {}
	if opts.ReaderCap {
		server, release, err = withReaderCap(func() (*fuse.Server, error) { return mountServer(dir, m.root, fo) })
	} else {
		server, err = mountServer(dir, m.root, fo)
	}
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w (is /dev/fuse available, and fuse3 installed?)", dir, err)
	}
	m.server, m.releaseReaders = server, release
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

// Flush makes every write that returned through the mount visible to
// the session: with Writeback the kernel may still hold dirty pages, and
// syncfs(2) sends them. Call it from outside any lock the mount's requests
// need (it waits for the mount to serve those writes).
func (m *Mount) Flush() error {
	if !m.opts.Writeback {
		return nil
	}
	fd, err := unix.Open(m.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("flush %s: %w", m.dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("flush %s: syncfs: %w", m.dir, err)
	}
	return nil
}

// Unmount unmounts; if the mount is busy (open files, a process's working
// directory) it detaches it lazily, so it goes away when released. Safe to
// call more than once.
func (m *Mount) Unmount() error {
	m.unmountOnce.Do(func() {
		m.cancel()
		err := m.server.Unmount()
		m.releaseReaders()
		if err != nil && errors.Is(err, syscall.EBUSY) || err != nil {
			if lerr := syscall.Unmount(m.dir, syscall.MNT_DETACH); lerr == nil {
				err = nil
			}
		}
		m.unmountErr = err
	})
	return m.unmountErr
}

// mountServer mounts root at dir and serves it. A direct mount (as root)
// opens /dev/fuse without close-on-exec (go-fuse uses a plain open), so
// every program this process started afterwards — rg, a sandboxed command,
// anything exec'd — would inherit the device: it could read and answer the
// mount's requests, and keep the mount alive, unserved, after this process
// ends. The descriptor is marked close-on-exec before any fork can happen:
// forks wait for syscall.ForkLock, which the direct mount holds (the pattern
// of Go's own non-atomic close-on-exec). A failed direct mount falls back to
// fusermount3, which passes the descriptor close-on-exec already.
func mountServer(dir string, root gofs.InodeEmbedder, fo *gofs.Options) (*fuse.Server, error) {
	if fo.MountOptions.DirectMountStrict {
		syscall.ForkLock.Lock()
		server, err := gofs.Mount(dir, root, fo)
		if err == nil {
			err = fuseDevicesCloseOnExec()
		}
		syscall.ForkLock.Unlock()
		if err == nil || server != nil {
			if err != nil {
				server.Unmount()
			}
			return server, err
		}
		fo.MountOptions.DirectMountStrict = false // try fusermount3
	}
	return gofs.Mount(dir, root, fo)
}

// fuseDevicesCloseOnExec marks every descriptor of /dev/fuse this process
// holds close-on-exec.
func fuseDevicesCloseOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list this process's descriptors to keep /dev/fuse from programs it starts: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
