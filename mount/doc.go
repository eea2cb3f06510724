// Package mount serves a session as a real POSIX filesystem through FUSE
// (go-fuse v2's fs API), so that programs in a container or sandbox see the
// very workspace the agent's tools change.
//
// The adapter is thin: every FUSE operation is one session call (Stat,
// List, OpenFile, WriteFile's siblings Mkdir, Remove, Rename, Symlink,
// Chmod, Truncate, SetTimes), and engine errors become errno values in one
// function (Errno). Content is read from blobs and upper files in place: a
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
// copy-up and snapshot/restore of unchanged files. Hard links are not
// supported (the engine has none): link(2) fails with ENOTSUP.
package mount
