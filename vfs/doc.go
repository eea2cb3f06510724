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
// snapshots call, seals upper files into blobs.
//
// # Durability
//
// A mutation returns once its event is on stable storage (group commit: one
// fdatasync covers every concurrent writer). Under a context from Relaxed a
// mutation returns as soon as its event reached the operating system: it
// survives a crash of the process but not of the machine until the journal's
// background flush (every FlushInterval) or an explicit Sync. The FUSE mount
// uses Relaxed, as POSIX only promises durability on fsync. Writes through a
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
//  2. Session.mu — guards the tree, the dirty set, the upper-file registry
//     and handle state. Held only for metadata work: content is hashed,
//     stored and copied outside it.
//  3. upperFile.mu — held shared by writers while they pwrite into an upper
//     file, exclusively by whoever commits, freezes or closes it; so a
//     write lands wholly before or wholly after a snapshot.
//  4. Journal.mu — orders appends; taken while Session.mu is held, so the
//     journal's order is the order events were applied.
//
// Waiting for durability happens after Session.mu is released, and
// subscribers are notified outside all locks.
package vfs
