// Package snapshot is vfsd's repository: the content-addressed store that
// holds file contents and snapshots, the sessions that work over it, the
// snapshots taken of them, and the sharing of snapshots through a remote
// store that several daemons use.
//
// # Model
//
// A Store is a content-addressed object store: Put names content by its
// hash and an object is never written again. It has two namespaces: Blobs
// (file contents and directory manifests) and Records (snapshot records
// and manifest packs). LocalStore.PutFile stores a local file without copying it
// where it can: a file nobody writes any more (a session's sealed upper
// file) becomes the object by a hard link, one that may still change (an
// overlay mount's upper file) by a clone where the filesystem shares
// extents; either is hashed under a temporary name in the store and
// renamed into place, so an object's bytes always match its name. LocalStore keeps objects as read-only files in a
// directory (one process at a time, by flock); MemoryStore is for tests;
// package s3store is the remote one.
//
// A Repo ties a Store to the sessions kept in a directory beside it. It
// creates sessions (NewSession, O(1) in the size of the base snapshot: the
// tree is shared), finds them when opened but recovers each (vfs.Open:
// base loaded, journal replayed) only on its first use (Session), and
// takes, loads, restores, forks, diffs, materializes and deletes their
// snapshots. Sessions see the store through the Repo (Blobs): every Put is
// pinned until the session references the blob.
//
// A Snapshot is a loaded Record and its vfs.Tree, in which every file is a
// blob. Its ID is the hash of its record object (record.go): a format
// line, the Record as one JSON line (the root directory's manifest and own
// node, the parent snapshot, label, session, totals and a pack index), then
// a pack of the directory manifests this snapshot was the first to write.
// A manifest (manifest.go) lists one directory's children (name and node,
// vfs.AppendNode); a child directory's node carries its manifest's hash, so
// the manifests form a Merkle tree as git's trees do. Unchanged directories
// keep their hashes: a snapshot costs what changed since the session's last
// one (Repo.Snapshot), writes one object, and shares every other manifest
// with the earlier records that hold them, which the Repo indexes. A diff
// skips every subtree whose hashes match.
//
// Get opens a local record by its head alone (headrec.go, packindex.go)
// and, for records that allow it, returns a lazy tree that reads a
// directory's manifest when something first looks inside it (lazy.go):
// opening a session on a snapshot costs the same at any size. Records
// written before node counts, and snapshots with hard links, load whole.
//
// DeleteSnapshots deletes records; the manifests a remaining snapshot
// still needs are first moved into a manifest pack, an object in Records
// that is no snapshot. GC is mark and sweep: it marks every blob a
// snapshot or a live session (its journal and upper files) references,
// deletes the rest in batches but those pinned, and drops the packs
// nothing needs.
//
// # Remote
//
// With SetRemote, a Repo keeps everything it writes local and shares
// snapshots through the remote (remote.go). Push uploads what the remote
// lacks of a snapshot — its blobs, the records holding its manifests — and
// its record last; QueuePush does it in the background, its queue kept in
// RemoteOptions.StateDir. What is missing locally is fetched on first use,
// verified against its hash, and kept in the local store; fetched blobs
// are a cache bounded by RemoteOptions.CacheBytes, least recently used
// first, never one pinned or one this daemon stored. HoldLocal makes a
// snapshot's blobs local and keeps them (the overlay mount's kernel reads
// them straight from the blob directory). DeleteRemote deletes remote
// records, moving shared manifests into a pack first; RemoteGC deletes
// unreferenced remote blobs older than a grace period.
//
// The remote is a bucket others may write to, so nothing read from it is
// trusted: every object fetched is hashed, RemoteGC skips what it cannot
// read as a record or pack and stops before deleting anything when it
// cannot be sure, and a push relies on an object the remote lists only
// under a verification mark (remote_verify.go): this daemon uploaded,
// fetched or read back that content, and the listing still shows the size
// and ETag it had then. Other objects are checked and repaired. Marks are
// kept in StateDir across restarts.
//
// # Invariants
//
//   - Objects are immutable and named by the hash of their content; a
//     manifest or record read, locally or from the remote, is hashed and
//     compared before it is used (a local record as a whole in the
//     background: a mismatch marks it corrupt, ErrCorruptObject).
//   - A record is stored after everything it names, locally and in the
//     remote: a record present means its snapshot is whole.
//   - Deleting a snapshot never damages another (packs), and a snapshot a
//     live session needs is not deleted (InUseError).
//   - GC never deletes a referenced blob: a Put pins its blob until the
//     caller references it, and blobs pinned or snapshots recorded since a
//     collection began are kept by it.
//
// # Concurrency and lock order
//
// A Repo is safe for concurrent use. Its locks are taken in this order,
// never the reverse:
//
//  1. Repo.gcRun — serialises GC and DeleteSnapshots.
//  2. Repo.records — held shared by whatever writes a record or relies on
//     one staying (Snapshot, CommitTree, NewSession, Restore, a push working
//     out what to send), exclusively by what deletes records
//     (DeleteSnapshots, GC's pack collection).
//  3. Repo.gc — held shared by every Put until its blob is pinned,
//     exclusively by GC's sweep and the remote cache's eviction while they
//     delete.
//  4. Repo.pins.mu — pin counts, and what a running collection must keep.
//  5. Repo.mu — the sessions, the loaded snapshots and the manifest index;
//     held for that bookkeeping. The remote's own mutexes (remoteLink) are
//     leaves, and none is held while the remote is asked.
//
// A Repo's locks come before a session's (vfs's lock order): Restore holds
// records while the session resets. NewSession and Restore fetch a remote
// snapshot before they take records (fetchRecordUnlocked), and a push
// holds it only while it works out what to send, never while it uploads:
// a slow remote does not hold up deletions.
//
// # Where to start reading
//
// store.go (Store), repo.go (Repo and its sessions), snapshot.go (Record,
// Snapshot, Get, Snapshot, Restore, Fork), then record.go and manifest.go
// for the formats, headrec.go and lazy.go for loading, gc.go and delete.go
// for deletion, and remote.go with remote_verify.go, remote_gc.go,
// remote_hold.go and remote_delete.go for the remote. local.go and
// local_put.go are LocalStore.
package snapshot
