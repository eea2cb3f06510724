package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Record is what a snapshot stores besides its manifests: the root
// directory, lineage and totals. A snapshot's ID is the hash of its record.
type Record struct {
	Format  string   `json:"format"`
	Root    vfs.Hash `json:"root"`      // manifest of the root directory
	RootDir RootNode `json:"root_node"` // the root directory's own node
	MaxIno  uint64   `json:"max_ino"`   // inode high-water mark
	Parent  string   `json:"parent,omitempty"`
	Label   string   `json:"label,omitempty"`
	Session string   `json:"session,omitempty"` // the session it was taken of
	Created int64    `json:"created"`           // Unix ms
	Files   int64    `json:"files"`
	Bytes   int64    `json:"bytes"`
	// Nodes counts the tree's nodes, the root included, and HardLinks
	// says whether any node has several names: a snapshot whose record
	// has them (every record written since lazy loading) is loaded lazily
	// unless it has hard links; 0 in older records, loaded whole.
	Nodes     int64 `json:"nodes,omitempty"`
	HardLinks bool  `json:"hard_links,omitempty"`

	// SessionUID identifies the incarnation of Session it was taken of
	// (RepoOptions.SessionUID): session IDs may be reused, UIDs are not.
	SessionUID string `json:"session_uid,omitempty"`

	// PackIndex says where each manifest of the record's pack is, so that
	// a record opened by its head reads a manifest with one ReadAt instead
	// of walking the pack's entry headers (see packIndex). Records written
	// before it have none and are walked; readers that do not know it
	// ignore it. Decoding a record moves it out of the Record.
	PackIndex []byte `json:"pack_index,omitempty"`
}

// RootNode is the root directory's own metadata. Node, when set (records
// written since owners existed), is the root's full node in vfs.AppendNode
// form and wins over the other fields, which older records have alone.
type RootNode struct {
	Mode    uint32 `json:"mode"`
	Version uint64 `json:"version"`
	Ino     uint64 `json:"ino"`
	Created int64  `json:"created"`
	Updated int64  `json:"updated"`
	Node    []byte `json:"node,omitempty"`
}

func rootNodeOf(n vfs.Node) RootNode {
	n.Blob = vfs.Hash{}
	return RootNode{Mode: uint32(n.Mode & fs.ModePerm), Version: n.Version, Ino: n.Ino, Created: n.Created, Updated: n.Updated,
		Node: vfs.AppendNode(nil, "", n)}
}

func (r RootNode) node() vfs.Node {
	if len(r.Node) > 0 {
		if _, n, rest, err := vfs.DecodeNode(r.Node); err == nil && len(rest) == 0 && n.IsDir() {
			return n
		}
	}
	return vfs.Node{Kind: vfs.KindDir, Mode: fs.FileMode(r.Mode) & fs.ModePerm, Version: r.Version, Ino: r.Ino,
		Uid: vfs.NoOwner, Gid: vfs.NoOwner, Created: r.Created, Updated: r.Updated}
}

// CreatedAt returns the record's creation time in UTC.
func (r Record) CreatedAt() time.Time { return time.UnixMilli(r.Created).UTC() }

// Snapshot is a loaded snapshot: its record and its tree, in which every
// file's content is a blob. Snapshots are immutable.
type Snapshot struct {
	ID        string
	Record    Record
	Tree      vfs.Tree
	manifests int         // see ManifestCount; with head set, counted on demand
	head      *headRecord // set when the record was opened by its head
	repo      *Repo
	dirs      dirIndex
	reader    *snapManifests // reads this snapshot's manifests
}

// ManifestCount returns how many directory manifests this snapshot's
// record stores: the directories that changed since its parent. For a
// snapshot opened by its record's head (see headrec.go) the first call
// scans the headers of the record's pack; 0 if that fails (the failure is
// reported by the snapshot's uses).
func (s *Snapshot) ManifestCount() int {
	if s.head == nil {
		return s.manifests
	}
	n, err := s.repo.headCount(context.Background(), s.head)
	if err != nil {
		return 0
	}
	return n
}

// errSnapshotNotFound reports an unknown snapshot ID.
func errSnapshotNotFound(id string) error {
	return &vfs.Error{Op: "snapshot", Path: id, Code: vfs.CodeNotFound, Msg: "no such snapshot"}
}

// Get returns the snapshot with the given ID (full hex form), loading its
// manifests on first use. Later calls return the cached, shared tree.
func (r *Repo) Get(ctx context.Context, id string) (*Snapshot, error) {
	r.mu.Lock()
	snap := r.snaps[id]
	r.mu.Unlock()
	if snap != nil {
		return snap, nil
	}
	h, err := vfs.ParseHash(id)
	if err != nil {
		return nil, &vfs.Error{Op: "snapshot", Path: id, Code: vfs.CodeInvalid, Msg: "not a snapshot ID (64 hex digits)"}
	}
	if !r.eager {
		rec, hr, ok, b, err := r.openHead(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("load snapshot %s: %w", h.Short(), err)
		}
		if ok && lazyLoadable(rec) {
			hr = r.keepHead(hr)
			reader := newSnapManifests(r, h, nil, rec.Parent)
			reader.mr.heads, reader.mr.byHead = []*headRecord{hr}, true
			root := rec.RootDir.node()
			root.Blob = vfs.Hash{}
			tree := vfs.NewLazyTree(root.Normalize(), rec.Root, vfs.NewLazyLoader(reader, r.lazyCache),
				vfs.LazyTotals{Files: rec.Files, Bytes: rec.Bytes, MaxIno: rec.MaxIno, Nodes: int(rec.Nodes)})
			return r.cache(&Snapshot{ID: id, Record: rec, Tree: tree, head: hr, repo: r, dirs: dirIndex{tree: tree}, reader: reader}), nil
		}
		if b != nil {
			return r.getWhole(ctx, id, h, b)
		}
	}
	b, err := r.readObject(ctx, Records, h)
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, errSnapshotNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", h.Short(), err)
	}
	return r.getWhole(ctx, id, h, b)
}

// getWhole is Get of record h, read whole and verified into b.
func (r *Repo) getWhole(ctx context.Context, id string, h vfs.Hash, b []byte) (*Snapshot, error) {
	rec, manifests, err := r.indexRecord(h, b)
	if errors.Is(err, errIsPack) {
		return nil, errSnapshotNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", h.Short(), err)
	}
	reader := newSnapManifests(r, h, b, rec.Parent)
	if lazyLoadable(rec) && !r.eager {
		reader.mr.byHead = true
		root := rec.RootDir.node()
		root.Blob = vfs.Hash{}
		tree := vfs.NewLazyTree(root.Normalize(), rec.Root, vfs.NewLazyLoader(reader, r.lazyCache),
			vfs.LazyTotals{Files: rec.Files, Bytes: rec.Bytes, MaxIno: rec.MaxIno, Nodes: int(rec.Nodes)})
		return r.cache(&Snapshot{ID: id, Record: rec, Tree: tree, manifests: manifests, dirs: dirIndex{tree: tree}, reader: reader}), nil
	}
	tree, dirs, err := r.loadTree(ctx, rec.RootDir.node(), rec.Root, rec.MaxIno, rec.Parent)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", h.Short(), err)
	}
	return r.cache(&Snapshot{ID: id, Record: rec, Tree: tree, manifests: manifests, dirs: dirIndex{set: dirs}, reader: reader}), nil
}

// cache keeps a loaded snapshot, returning the one already cached if
// another goroutine won the race.
func (r *Repo) cache(snap *Snapshot) *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.snaps[snap.ID]; cur != nil {
		return cur
	}
	r.snaps[snap.ID] = snap
	return snap
}

// Resolve turns a full snapshot ID or a unique prefix of one (at least 4
// hex digits) into a full ID.
func (r *Repo) Resolve(ctx context.Context, prefix string) (string, error) {
	prefix = strings.ToLower(prefix)
	if len(prefix) == 2*vfs.HashSize {
		return prefix, nil
	}
	if len(prefix) < 4 {
		return "", &vfs.Error{Op: "snapshot", Path: prefix, Code: vfs.CodeInvalid, Msg: "give at least 4 hex digits of the snapshot ID"}
	}
	var found []string
	err := r.store.List(ctx, Records, func(h vfs.Hash, _ int64) error {
		if s := h.String(); strings.HasPrefix(s, prefix) && !r.isPack(h) {
			found = append(found, s)
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case len(found) == 0:
		return "", errSnapshotNotFound(prefix)
	case len(found) > 1:
		return "", &vfs.Error{Op: "snapshot", Path: prefix, Code: vfs.CodeInvalid, Msg: "ambiguous prefix; give more hex digits"}
	}
	return found[0], nil
}

// List returns the records of all snapshots, newest first.
func (r *Repo) List(ctx context.Context) ([]*Snapshot, error) {
	var ids []string
	if err := r.store.List(ctx, Records, func(h vfs.Hash, _ int64) error {
		ids = append(ids, h.String())
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]*Snapshot, 0, len(ids))
	for _, id := range ids {
		snap, err := r.Get(ctx, id)
		if errors.Is(err, vfs.ErrNotFound) {
			continue // a manifest pack, or deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, snap)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Record.Created != out[j].Record.Created {
			return out[i].Record.Created > out[j].Record.Created
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Snapshot records the session's current state as a new snapshot and makes
// it the session's reference for the next one. Its cost grows with what
// changed since the session's last snapshot (or restore), not with the
// workspace: only changed content is hashed and only the directories on the
// paths to changes get new manifests. The session keeps serving reads and
// writes meanwhile.
func (r *Repo) Snapshot(ctx context.Context, s *vfs.Session, label string) (*Snapshot, error) {
	f, err := s.Freeze(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID(), err)
	}
	defer f.Release()
	uid := ""
	if r.sessionUID != nil {
		uid = r.sessionUID(s)
	}
	snap, err := r.record(ctx, f, label, s.ID(), uid)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID(), err)
	}
	if err := s.MarkSnapshot(ctx, f, snap.ID); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID(), err)
	}
	return snap, nil
}

// frozenManifests computes the directory hashes of a frozen tree from those
// of its reference snapshot; unless dry, the writer's pack holds the new
// manifests.
func (r *Repo) frozenManifests(ctx context.Context, f *vfs.Frozen, dry bool) (*manifestWriter, dirIndex, error) {
	prev := dirIndex{set: newDirHashes()}
	changes := f.Changes
	if f.Ref != "" {
		ref, err := r.Get(ctx, f.Ref)
		switch {
		case err == nil:
			prev = ref.dirs
		case errors.Is(err, vfs.ErrNotFound):
			changes = []vfs.Change{{Path: vfs.Root, Subtree: true}} // reference gone: hash all
		default:
			return nil, dirIndex{}, err
		}
	} else {
		changes = []vfs.Change{{Path: vfs.Root, Subtree: true}}
	}
	w := &manifestWriter{r: r, tree: f.Tree, dry: dry}
	dirs, err := w.update(ctx, prev, changes)
	if err != nil {
		return nil, dirIndex{}, err
	}
	return w, dirs, nil
}

// record writes the record of a frozen tree, with its new manifests.
func (r *Repo) record(ctx context.Context, f *vfs.Frozen, label, session, uid string) (*Snapshot, error) {
	r.records.RLock()
	defer r.records.RUnlock()
	w, dirs, err := r.frozenManifests(ctx, f, false)
	if err != nil {
		return nil, err
	}
	return r.writeRecord(ctx, f.Tree, dirs, w.pack, Record{Parent: f.Ref, Label: label, Session: session, SessionUID: uid})
}

// writeRecord stores the record of tree, whose directory hashes are dirs,
// with the pack of manifests no earlier record holds. It is one durable
// object.
func (r *Repo) writeRecord(ctx context.Context, tree vfs.Tree, dirs dirIndex, pack []packEntry, rec Record) (*Snapshot, error) {
	root, ok, err := dirs.get(vfs.Root)
	if err != nil || !ok {
		return nil, fmt.Errorf("store snapshot record: the root directory has no manifest (%v)", err)
	}
	rootNode, _, _ := tree.Lookup(vfs.Root) // the root is never beneath a lazy directory
	rec.Format, rec.Root, rec.RootDir, rec.MaxIno = recordFormat, root, rootNodeOf(rootNode), tree.MaxIno()
	rec.Created, rec.Files, rec.Bytes = r.clock().UnixMilli(), tree.Files(), tree.Bytes()
	rec.Nodes, rec.HardLinks = int64(tree.Len()), tree.HasLinks()
	b, err := encodeRecord(rec, pack)
	if err != nil {
		return nil, err
	}
	h, _, unpin, err := r.put(ctx, Records, bytes.NewReader(b), PutOptions{})
	if err != nil {
		return nil, fmt.Errorf("store snapshot record: %w", err)
	}
	defer unpin()
	if _, _, err := r.indexRecord(h, b); err != nil {
		return nil, err
	}
	for _, e := range pack {
		r.manifests.add(e.hash, e.data)
	}
	snap := r.cache(&Snapshot{ID: h.String(), Record: rec, Tree: tree, manifests: len(pack), dirs: dirs,
		reader: newSnapManifests(r, h, b, rec.Parent)})
	r.pins.mu.Lock()
	if r.pins.fresh != nil {
		// A collection is running and may have listed the snapshots
		// already: have it mark this one before it deletes anything.
		r.pins.freshSnaps = append(r.pins.freshSnaps, snap)
	}
	r.pins.mu.Unlock()
	return snap, nil
}

// CommitTree records tree — whose files must all be blobs, as a host import
// builds it — as a new snapshot, writing every manifest.
func (r *Repo) CommitTree(ctx context.Context, tree vfs.Tree, label string) (*Snapshot, error) {
	r.records.RLock()
	defer r.records.RUnlock()
	w := &manifestWriter{r: r, tree: tree}
	dirs, err := w.update(ctx, dirIndex{set: newDirHashes()}, []vfs.Change{{Path: vfs.Root, Subtree: true}})
	if err != nil {
		return nil, fmt.Errorf("commit tree: %w", err)
	}
	return r.writeRecord(ctx, tree, dirs, w.pack, Record{Label: label})
}

// fetchRecordUnlocked, with a remote, loads snapshot id (fetching its
// record when it is not local) before the caller takes r.records: a slow
// remote then holds up that caller alone, not the deletions — and, through
// them, everything else — waiting for the lock. The caller's Get under the
// lock finds it loaded.
func (r *Repo) fetchRecordUnlocked(ctx context.Context, id string) error {
	if r.remote == nil {
		return nil
	}
	_, err := r.Get(ctx, id)
	return err
}

// Restore returns the session to snapshot id. It costs O(1) in the size of
// the workspace: the session adopts the snapshot's tree, sharing every node
// and blob.
func (r *Repo) Restore(ctx context.Context, s *vfs.Session, id string) error {
	if err := r.fetchRecordUnlocked(ctx, id); err != nil {
		return err
	}
	r.records.RLock() // the snapshot stays until the session holds it
	defer r.records.RUnlock()
	snap, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	return s.ResetTo(ctx, snap.Tree, snap.ID)
}

// Source names what to fork, diff or materialize: a snapshot or a live
// session. Exactly one field is set.
type Source struct {
	Snapshot string
	Session  *vfs.Session
}

// Fork creates a new session from a snapshot, or from a live session's
// current state (which is snapshotted first, at the cost of what changed
// since its last snapshot). The fork and its origin are isolated from then
// on. opts.Base is ignored.
func (r *Repo) Fork(ctx context.Context, src Source, opts SessionOptions) (*vfs.Session, error) {
	id := src.Snapshot
	if src.Session != nil {
		snap, err := r.Snapshot(ctx, src.Session, "fork")
		if err != nil {
			return nil, err
		}
		id = snap.ID
	}
	if id == "" {
		return nil, &vfs.Error{Op: "fork", Code: vfs.CodeInvalid, Msg: "name a snapshot or a session to fork"}
	}
	opts.Base = id
	return r.NewSession(ctx, opts)
}
