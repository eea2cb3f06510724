// Package vfs is the session engine of vfsd: canonical paths, the immutable
// Tree, the events that change it and the pure reducer that folds them, the
// journal that makes them durable, and the Session that ties these to a
// copy-on-write overlay of a blob store (unchanged content) and an upper
// directory (content written through handles).
//
// # Model
//
// A Session's state is a Tree: an immutable, persistent map from Path to
// Node. Every mutation — a tool call, a FUSE write, a restore — becomes an
// Event; Reduce(tree, event) returns the next tree; the session journals the
// event and swaps the tree. Replaying the journal over the session's base
// snapshot reproduces the tree byte for byte.
//
// File content lives in one of two places. Whole-file writes (WriteFile) put
// the content into the blob store and point the node at the blob: nothing is
// copied into the session. Random-access writes through a Handle copy the
// file up into the session's upper directory on the first write (reflink
// where the filesystem supports it, copy_file_range otherwise) and write in
// place; a Commit event records each batch of such writes. Freeze, which
// snapshots call, seals upper files into blobs: a frozen upper file is never
// written again (the next write copies up anew), so a store that can
// (FileBlobStore, LocalStore on the same filesystem) takes the file itself
// as the blob by a hard link, hashing it where it lands, several files at a
// time and outside Session.mu; nothing is copied. Until the seal is
// journaled an upper file may thus also be a blob: recovery never writes
// or truncates such a file in place, it replaces it by a copy first.
//
// # Memory
//
// A Tree's path map holds each node packed (entry.go): 96 bytes rather than
// Node's 184, the millisecond mirrors derived, atime and ctime as flags
// when they equal mtime or btime, the rarer fields (upper file, symlink
// target, device, xattrs, other times) in an extra record. TreeBuilder
// compacts its map once built, so a tree loaded or imported in bulk keeps
// no half-empty B-tree leaves: about 160 bytes of heap per file at 50,000
// files.
//
// # POSIX metadata
//
// A Node carries what a POSIX filesystem keeps: kind (file, dir, symlink,
// fifo, socket, character or block device with Rdev), the twelve mode bits
// (Go's fs.ModeSetuid, fs.ModeSetgid and fs.ModeSticky stand for 0o4000,
// 0o2000, 0o1000; see ModeFromUnix and Node.UnixMode), Uid and Gid,
// Atime, Mtime, Ctime and Btime in nanoseconds (Created and Updated mirror
// Btime and Mtime in milliseconds for tool receipts), Nlink, extended
// attributes (Xattrs) and an inode number. Events carry their time to the
// nanosecond (Time and Ns) and the reducer follows POSIX's time rules:
// content changes move mtime and ctime; chmod, chown, xattr changes, link,
// unlink and rename move ctime only, always to the event's time, never to
// a caller's. The engine does not move atime on reads (as noatime).
//
// Owners: nodes of stores and journals older than owners carry NoOwner; a
// Tree reports them with its default owner (Tree.WithOwner), which a
// session sets to its own (Options.Owner, kept in the journal header).
// Sessions stamp their default owner on the nodes they create unless the
// caller gives one.
//
// # Hard links
//
// A Tree is two persistent maps. The path map holds every path's node; a
// node with more than one name (a hard link) is held once in the inode map,
// from inode number to the node and its sorted names, and each of its paths
// holds a stub naming the inode. Lookup, Walk and ChildrenErr resolve stubs, so
// every name reads the same node; a change through any name (Tree.set with
// the node's Ino) changes the shared node, in O(log n) plus the names of
// that node. Link adds a name; unlinking one of two names turns the
// survivor back into a plain entry. Renames move stubs and rename them in
// their inode's names. Snapshots, restore and fork share both maps: O(1).
// Directories are never linked; their Nlink (2 + subdirectories) is kept
// by the reducer and recomputed by TreeBuilder.
//
// Outside the tree, handles are keyed by inode: a handle whose name is
// unlinked while another remains moves to that name rather than detaching.
// A change to a hard-linked node marks all its names dirty, so snapshot
// manifests (which list the node in full under each name, joined again by
// Ino when loaded) are rewritten for every name.
//
// # Durability
//
// A mutation returns once its event is on stable storage (group commit: one
// fdatasync covers every concurrent writer). Under a context from Relaxed a
// mutation returns as soon as its event reached the operating system: it
// survives a crash of the process but not of the machine until the journal's
// background flush (every FlushInterval) or an explicit Sync. The FUSE mount
// uses Relaxed, as POSIX only promises durability on fsync. Content written
// with WriteOptions.DeferredBlob is not synced by its Put: every sync of the
// journal first syncs the blob store when such content is pending, so a
// record is never durable before the content it names. Writes through a
// Handle are durable after Handle.Sync; Flush and Close commit them to the
// journal.
//
// # Concurrency and lock order
//
// A Session is safe for concurrent use by any number of goroutines (tool
// calls and FUSE requests at once). Locks are taken in this order, never the
// reverse:
//
//  1. Session.freezeMu — serialises Freeze, ResetTo and Reset.
//  2. Session.deferMu — held shared by a DeferredBlob write from its Put to
//     its journal append, exclusively by the journal's sync (which takes
//     no other lock of the session).
//  3. Session.mu — guards the tree, the dirty set, the upper-file registry
//     and handle state. Held only for metadata work: content is hashed,
//     stored and copied outside it.
//  4. upperFile.mu — held shared by writers while they pwrite into an upper
//     file, exclusively by whoever commits, freezes or closes it; so a
//     write lands wholly before or wholly after a snapshot.
//  5. Journal.mu — orders appends; taken while Session.mu is held, so the
//     journal's order is the order events were applied.
//
// Waiting for durability happens after Session.mu is released, and
// subscribers are notified outside all locks.
package vfs
