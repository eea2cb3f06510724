package mount

import "time"

// DefaultCacheTimeout is how long the kernel may trust entries and
// attributes without asking; invalidation keeps it correct.
const DefaultCacheTimeout = time.Hour

// Options configure a mount.
type Options struct {
	// ReadOnly refuses every change (EROFS).
	ReadOnly bool
	// AllowOther lets users other than the mounting one in (needs
	// user_allow_other in /etc/fuse.conf when not root). It always
	// implies the kernel's permission checks (NoDefaultPermissions is
	// ignored): the FUSE server checks no permissions itself, so without
	// them any user could read, write and chmod every file.
	AllowOther bool
	// DefaultPermissions is kept for compatibility: the kernel's
	// permission checks (FUSE default_permissions) are on unless
	// NoDefaultPermissions turns them off.
	DefaultPermissions bool
	// NoDefaultPermissions turns off the kernel's permission checks
	// (default_permissions): every caller may then do everything the
	// mounting user may, whatever the owners and modes say (sticky
	// directories, 0600 files, chown rules are not enforced). It spares
	// nothing measurable and is meant for debugging only; AllowOther
	// overrides it.
	NoDefaultPermissions bool
	// UID and GID, when not zero, stand for the session's default owner
	// (vfs.Session.DefaultOwner) in the mount: what the default owner
	// owns shows as owned by UID/GID, and what UID/GID create or chown to
	// is stored as the default owner's. The two IDs swap places (so the
	// mapping stays one-to-one); every other owner shows as stored. With
	// AllowOther, name the container's user, who then has the owner's
	// rights over the session's files.
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
	// Writeback turns on the kernel's writeback cache
	// (FUSE_WRITEBACK_CACHE): write(2) fills the page cache and returns,
	// and the kernel sends the dirty pages later, in large writes (at the
	// latest on close, fsync, syncfs or memory pressure). Whoever reads the
	// session other than through this mount (tools, snapshots, diffs) must
	// call Flush (or Sync) first to see every write that returned.
	Writeback bool
	// SymlinkCaching lets the kernel cache symlink targets
	// (FUSE_CACHE_SYMLINKS); a target changed by a tool is invalidated
	// like any content.
	SymlinkCaching bool
	// IgnoreSecurityLabels answers every getxattr of security.* with
	// ENODATA without asking the session: it saves the kernel's
	// security.capability lookup before each write, and hides file
	// capabilities and security labels stored in the session.
	IgnoreSecurityLabels bool
	// NoCacheFill turns off handing the kernel the content of small
	// files at a read-only open (see fillCache): reads after a clone or
	// an untar through the mount then each cost a READ round trip. For
	// measurements.
	NoCacheFill bool
	// NoNegativeCache keeps the kernel from caching that a name is
	// missing: every lookup of a missing name then asks the mount. For
	// measurements.
	NoNegativeCache bool
	// Splice lets go-fuse try splice(2) for READ replies, which it can
	// only use for replies that name a file; every reply of this mount is
	// bytes, so each READ would pay two system calls for nothing. For
	// measurements.
	Splice bool
	// NoCacheDir keeps the kernel from caching directory listings. By
	// default it keeps them in its page cache (FOPEN_CACHE_DIR), as
	// fuse-overlayfs has it do: a directory read again is listed without
	// READDIR round trips until it changes (the kernel drops the listing on
	// its own changes; invalidation on tools', other mounts' and
	// restores'). For measurements.
	NoCacheDir bool
	// NoReaddirPlus turns off READDIRPLUS: listings carry no attributes,
	// and a name the kernel has not looked up costs a LOOKUP when stat'ed.
	// For measurements.
	NoReaddirPlus bool
	// FullReaddirPlus answers READDIRPLUS as go-fuse does by default:
	// every entry looked up again (a session lookup each) and sent with
	// its attributes, also those the kernel holds already. By default only
	// entries the kernel has not looked up carry attributes, taken from the
	// listing. For measurements.
	FullReaddirPlus bool
	// ReaderCap creates the mount's server with at most three reader
	// goroutines and raises the process's GOMAXPROCS to leave a P idle
	// (see withReaderCap): it cut the mount's CPU during require() by 14%
	// but not its wall time (2.85 s with it, 2.78 s without, quiet, medians
	// of 3), and it changes GOMAXPROCS for the whole process (briefly to 1
	// while the mount starts), so it is off by default. For measurements.
	ReaderCap bool
	// FsName is the source name shown in /proc/mounts; "vfsd:<session>"
	// when empty.
	FsName string
	// AllowSetID mounts without nosuid: set-user-ID and set-group-ID bits
	// and file capabilities (security.capability) of the session's files
	// then take effect when they are executed. Off by default: the session
	// keeps them as data (chmod 4755 sticks), but whoever was root in the
	// mount must not become root on the host through it. Only a mount made
	// as root honours it (fusermount3 ignores it for other users).
	AllowSetID bool
	// AllowDevices mounts without nodev: the session's device nodes then
	// open the host's devices. Off by default (they are kept as data but
	// opening one fails with EACCES). Only a mount made as root honours it.
	AllowDevices bool
}
