// Package mount serves a session as a real POSIX filesystem through FUSE
// (go-fuse v2's fs API), so that programs in a container or sandbox see the
// very workspace the agent's tools change.
//
// The adapter is thin: every FUSE operation is one session call (Stat,
// List, OpenFileWith, Mkdir, Mknod, Remove, Rename, SymlinkAs, Link,
// Chmod, Chown, Utimens, Truncate, the xattr calls), and engine errors
// become errno values in one function (Errno). Content is read from blobs and upper files in place: a
// read-only open copies nothing (and, with Options.Passthrough, where the
// kernel allows it, is served by FUSE passthrough straight from the backing
// file); the first write copies a file up inside the engine.
//
// The kernel caches entries, attributes and pages for a long time
// (Options.CacheTimeout); the mount subscribes to the session and
// invalidates exactly what others changed — a tool's write, a restore, a
// reset — so the mount sees those at once. Its own changes carry its origin
// (vfs.WithOrigin) and are skipped: the kernel made them.
//
// Inode numbers are the engine's node inodes: stable across renames,
// copy-up and snapshot/restore of unchanged files; hard links share one.
//
// POSIX metadata: the mount reports what the engine keeps (owners, the
// twelve mode bits, file types incl. fifos, sockets and devices, link
// counts, device numbers, nanosecond times, extended attributes) and
// creates nodes owned by the FUSE caller's fsuid/fsgid with the mode the
// kernel sends (umask applied, 0 honoured). Permission checks are the
// kernel's (default_permissions, on unless Options.NoDefaultPermissions):
// sticky directories, chown rules, clearing setuid/setgid on write,
// truncate and chown (the kernel sends the chmod: no handle_killpriv is
// negotiated), CAP_MKNOD for devices. Locks are the kernel's too (exact
// POSIX, OFD and flock semantics on this host). O_TMPFILE fails with
// EOPNOTSUPP (a node must have a name in the engine); fallocate extends
// (mode 0) or does nothing (KEEP_SIZE), and refuses the other modes.
package mount
