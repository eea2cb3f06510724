package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Hash     vfs.Hash
	Size     int64
	Modified time.Time // when it was stored (or last touched)
	// ETag is the store's tag of the stored content (S3's entity tag),
	// which changes when someone writes other content under the name; ""
	// when the store has none.
	ETag string
}

// InfoLister is implemented by stores that know when each object was
// stored; remote garbage collection needs it.
type InfoLister interface {
	ListInfo(ctx context.Context, ns Namespace, fn func(ObjectInfo) error) error
}

// Toucher is implemented by stores that can renew an object's time without
// sending its content again (S3: a copy onto itself).
type Toucher interface {
	Touch(ctx context.Context, ns Namespace, h vfs.Hash) error
}

// RemoteGCReport tells what a remote garbage collection did.
type RemoteGCReport struct {
	Snapshots    int           `json:"snapshots"` // snapshot records in the remote
	Marked       int           `json:"marked"`    // blobs they reference
	Scanned      int           `json:"scanned"`   // blobs in the remote
	Deleted      int           `json:"deleted"`
	DeletedBytes int64         `json:"deleted_bytes"`
	Young        int           `json:"young"` // unreferenced, but younger than the grace period
	Grace        time.Duration `json:"grace_ns"`
	Duration     time.Duration `json:"duration_ns"`
}

// RemoteGC deletes the remote's blobs that no snapshot record in the
// remote references and that are older than the grace period
// (RemoteOptions.Grace). It is safe with daemons sharing the remote:
//
//   - Records are the roots and GC never deletes one; a push uploads a
//     snapshot's blobs and manifests before its record, so an unreferenced
//     blob is either garbage or part of a push in progress — which is
//     younger than the grace period, as long as pushes take less than it.
//   - A push relies on an object already in the remote only if a record
//     in the remote references it (its parent snapshot's), or it was stored
//     or touched less than Grace/2 ago; otherwise it touches it (renewing
//     its time) or uploads it again, before uploading its record.
//
// Any failure (a record that does not parse, a manifest no record holds)
// stops the collection before it deletes anything.
func (r *Repo) RemoteGC(ctx context.Context) (RemoteGCReport, error) {
	start := time.Now()
	l := r.remote
	if l == nil {
		return RemoteGCReport{}, errNoRemote
	}
	rep := RemoteGCReport{Grace: l.opts.Grace}
	lister, ok := l.store.(InfoLister)
	if !ok {
		return rep, &vfs.Error{Op: "remote gc", Code: vfs.CodeInvalid, Msg: "this remote store does not tell when objects were stored, so no grace period can protect pushes in flight"}
	}
	// Every record: the roots, and the manifests they hold.
	var ids []vfs.Hash
	if err := l.store.List(ctx, Records, func(h vfs.Hash, _ int64) error {
		ids = append(ids, h)
		return nil
	}); err != nil {
		return rep, fmt.Errorf("remote gc: list records: %w", err)
	}
	manifests := map[vfs.Hash][]byte{}
	var roots []vfs.Hash
	for _, id := range ids {
		b, err := l.readAll(ctx, Records, id)
		if err != nil {
			return rep, fmt.Errorf("remote gc: record %s: %w", id.Short(), err)
		}
		keep := func(h vfs.Hash, off, n int) { manifests[h] = b[off : off+n] }
		if isPack(b) {
			if err := decodePackEntries(b, len(packFormat)+1, keep); err != nil {
				return rep, fmt.Errorf("remote gc: pack %s: %w", id.Short(), err)
			}
			continue
		}
		rec, err := decodeRecord(b, keep)
		if err != nil {
			return rep, fmt.Errorf("remote gc: record %s: %w", id.Short(), err)
		}
		roots = append(roots, rec.Root)
		rep.Snapshots++
	}
	marked := map[vfs.Hash]struct{}{vfs.EmptyHash: {}}
	seen := map[vfs.Hash]bool{}
	var mark func(h vfs.Hash) error
	mark = func(h vfs.Hash) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		b, ok := manifests[h]
		if !ok {
			return fmt.Errorf("manifest %s is in no record of the remote", h.Short())
		}
		return decodeDir(b, func(_ string, n vfs.Node) error {
			switch {
			case n.IsDir():
				return mark(n.Blob)
			case !n.Blob.IsZero():
				marked[n.Blob] = struct{}{}
			}
			return nil
		})
	}
	for _, root := range roots {
		if err := mark(root); err != nil {
			return rep, fmt.Errorf("remote gc: %w", err)
		}
	}
	rep.Marked = len(marked)
	cutoff := time.Now().Add(-l.opts.Grace)
	var garbage []ObjectInfo
	if err := lister.ListInfo(ctx, Blobs, func(o ObjectInfo) error {
		rep.Scanned++
		if _, ok := marked[o.Hash]; ok {
			return nil
		}
		if o.Modified.After(cutoff) {
			rep.Young++
			return nil
		}
		garbage = append(garbage, o)
		return nil
	}); err != nil {
		return rep, fmt.Errorf("remote gc: list blobs: %w", err)
	}
	for _, o := range garbage {
		if err := l.store.Delete(ctx, Blobs, o.Hash); err != nil {
			return rep, fmt.Errorf("remote gc: delete %s: %w", o.Hash.Short(), err)
		}
		l.forget(Blobs, o.Hash)
		rep.Deleted++
		rep.DeletedBytes += o.Size
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// forget drops an object from the known set.
func (l *remoteLink) forget(ns Namespace, h vfs.Hash) {
	l.knownMu.Lock()
	delete(l.known, objKey{ns, h})
	delete(l.good, objKey{ns, h})
	l.knownMu.Unlock()
}

// readAll reads and verifies a whole object of the remote, refusing one
// larger than the daemon fetches (openCapped).
func (l *remoteLink) readAll(ctx context.Context, ns Namespace, h vfs.Hash) ([]byte, error) {
	b, err := l.openCapped(ctx, ns, h)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	buf := make([]byte, b.Size())
	n, err := b.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, err
	}
	if vfs.HashOf(buf) != h {
		return nil, fmt.Errorf("object %s: %w", h.Short(), ErrCorruptObject)
	}
	return buf, nil
}
