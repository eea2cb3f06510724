package snapshot

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
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
	Snapshots    int   `json:"snapshots"` // snapshot records in the remote
	Packs        int   `json:"packs"`     // manifest packs in the remote
	Marked       int   `json:"marked"`    // blobs they reference
	Scanned      int   `json:"scanned"`   // blobs in the remote
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	Young        int   `json:"young"` // unreferenced, but younger than the grace period
	// Skipped counts what the collection could not use: objects under the
	// records' prefix that are no snapshot record or manifest pack it can
	// read (another party's, corrupt, larger than it reads), manifests in
	// them that do not match their hash or do not decode, and manifests a
	// snapshot names that no record holds. SkippedWhy tells the first ten.
	// Blobs reachable only through what was skipped are not marked.
	Skipped    int      `json:"skipped"`
	SkippedWhy []string `json:"skipped_why,omitempty"`
	// DeleteFailed counts unreferenced blobs the remote refused to delete
	// (an object lock, a deny policy), passed over; DeleteError is the
	// first refusal.
	DeleteFailed int    `json:"delete_failed"`
	DeleteError  string `json:"delete_error,omitempty"`
	// BlobPacks counts the packs of blobs in the remote (their blobs are
	// counted in Scanned, Deleted and Young too); PacksDeleted, those
	// deleted whole, none of their blobs referenced; PacksRepacked, those
	// whose referenced blobs were copied to new packs before the old was
	// deleted: packs holding unreferenced blobs too, and small packs
	// merged.
	BlobPacks     int           `json:"blob_packs"`
	PacksDeleted  int           `json:"packs_deleted"`
	PacksRepacked int           `json:"packs_repacked"`
	Grace         time.Duration `json:"grace_ns"`
	Duration      time.Duration `json:"duration_ns"`
}

// ErrRemoteGCRefused is matched by the error of a remote garbage collection
// that stopped before deleting anything because it could not be sure what
// is referenced: a record in a format this daemon does not know, or more
// than it holds (RemoteOptions.GCMaxEntries, GCMaxSpoolBytes). The error
// says which.
var ErrRemoteGCRefused = errors.New("remote garbage collection deleted nothing")

// Bounds of remote garbage collection besides RemoteOptions' (see RemoteGC).
const (
	// gcMaxHead is the longest record line read (the Record's JSON and its
	// pack index, about 10 bytes per manifest).
	gcMaxHead = 64 << 20
	// gcMaxManifest is the largest manifest decoded (in memory, one at a
	// time): a directory of some 600,000 entries.
	gcMaxManifest = 64 << 20
	// gcDeleteBatch is how many blobs are gathered before they are deleted,
	// Parallel at a time, while the listing goes on.
	gcDeleteBatch = 512
	// gcMaxWhy is how many skipped objects a report describes.
	gcMaxWhy = 10
)

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
// Anyone who can write the bucket can put anything under the records'
// prefix, so nothing read there is taken on trust, and nothing planted can
// stop the collection or make it delete what a snapshot references:
//
//   - an object that is not a snapshot record or manifest pack this daemon
//     can read — content that is not its name, another format, a record
//     line that does not parse, a truncated pack, an object larger than
//     the daemon fetches (the larger of its cap and 1 GiB) — is skipped and
//     reported (Skipped, SkippedWhy), and only its head is read when it is
//     no record at all;
//   - a manifest is used only if its content hashes to its name, wherever
//     it is found; one that does not, or that does not decode, is skipped;
//   - a manifest a snapshot names that no record holds makes the
//     collection list the records again (another daemon's DeleteRemote may
//     have moved it into a pack the listing had passed); still missing, it
//     is skipped: nothing the remote holds leads to the blobs under it;
//   - a blob the remote refuses to delete is reported (DeleteFailed) and
//     passed over.
//
// But a record in a vfsd format this daemon does not know (a newer
// version) may reference any blob: then nothing is deleted, with an error
// matching ErrRemoteGCRefused that names it.
//
// Its memory is bounded: records are read one at a time and their
// manifests copied, verified, to an unlinked temporary file (in StateDir,
// else the system's), of which one manifest at a time is decoded; the
// hashes it keeps — the manifests' places, the referenced blobs, the
// snapshots — are bounded by RemoteOptions.GCMaxEntries and the file by
// GCMaxSpoolBytes, past which it stops before deleting anything
// (ErrRemoteGCRefused); unreferenced blobs are deleted in batches as the
// listing goes, never gathered. One collection runs at a time per
// repository. A failure of the remote stops it too: only what the report
// counts as deleted was.
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
	l.gcMu.Lock()
	defer l.gcMu.Unlock()
	m, err := newGCMarker(l, &rep)
	if err != nil {
		return rep, err
	}
	defer m.close()
	if err := m.readRecords(ctx, lister); err != nil {
		return rep, err
	}
	if err := m.mark(ctx); err != nil {
		return rep, err
	}
	if len(m.missing) > 0 {
		// Moved into a pack meanwhile? List the records again.
		m.again = true
		if err := m.readRecords(ctx, lister); err != nil {
			return rep, err
		}
		for h := range m.missing {
			if _, ok := m.index[h]; ok {
				delete(m.missing, h)
				m.stack = append(m.stack, h)
			}
		}
		if err := m.mark(ctx); err != nil {
			return rep, err
		}
		m.again = false
		for h := range m.missing {
			m.skip(Records, h, "a manifest a snapshot names that no record of the remote holds; the blobs only it leads to are not marked")
		}
	}
	rep.Marked = len(m.marked)
	if err := m.sweep(ctx, lister); err != nil {
		return rep, err
	}
	if err := m.sweepPacks(ctx); err != nil {
		return rep, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// gcSpan is where a verified manifest is in the collection's spool file.
type gcSpan struct {
	off, n int64
}

// gcMarker is the state of one remote garbage collection.
type gcMarker struct {
	l   *remoteLink
	rep *RemoteGCReport

	spool    *os.File // unlinked: the manifests read, verified
	spoolEnd int64

	index   map[vfs.Hash]gcSpan   // manifests, where in the spool
	read    map[vfs.Hash]struct{} // records and packs read whole and right
	roots   []vfs.Hash            // snapshots' root manifests not walked yet
	marked  map[vfs.Hash]struct{} // blobs referenced
	seen    map[vfs.Hash]struct{} // manifests queued or walked
	stack   []vfs.Hash            // manifests to walk (all in seen)
	missing map[vfs.Hash]struct{} // manifests walked to and not found
	again   bool                  // the second listing: skips are not counted again
	buf     []byte                // one manifest
}

func newGCMarker(l *remoteLink, rep *RemoteGCReport) (*gcMarker, error) {
	f, err := os.CreateTemp(l.opts.StateDir, "remote-gc-*")
	if err != nil {
		return nil, fmt.Errorf("remote gc: temporary file: %w", err)
	}
	_ = os.Remove(f.Name()) // gone with the descriptor (on Windows, at close)
	return &gcMarker{
		l: l, rep: rep, spool: f,
		index: map[vfs.Hash]gcSpan{}, read: map[vfs.Hash]struct{}{},
		marked: map[vfs.Hash]struct{}{vfs.EmptyHash: {}}, seen: map[vfs.Hash]struct{}{},
		missing: map[vfs.Hash]struct{}{},
	}, nil
}

func (m *gcMarker) close() {
	m.spool.Close()
	_ = os.Remove(m.spool.Name()) // where an open file cannot be removed
}

// room fails once holding n more hashes would pass GCMaxEntries.
func (m *gcMarker) room(n int) error {
	held := len(m.index) + len(m.read) + len(m.roots) + len(m.marked) + len(m.seen) + len(m.missing)
	if held+n > m.l.opts.GCMaxEntries {
		return fmt.Errorf("%w: the remote needs more than %d hashes in memory to be sure what is referenced (RemoteOptions.GCMaxEntries); nothing was deleted", ErrRemoteGCRefused, m.l.opts.GCMaxEntries)
	}
	return nil
}

// skip reports an object (or manifest) the collection does not use.
func (m *gcMarker) skip(ns Namespace, h vfs.Hash, why string) {
	if m.again {
		return
	}
	m.rep.Skipped++
	if len(m.rep.SkippedWhy) < gcMaxWhy {
		m.rep.SkippedWhy = append(m.rep.SkippedWhy, string(ns)+"/"+h.String()+": "+why)
	}
	m.l.log.Warn("remote gc: skipped an object of the remote", "object", string(ns)+"/"+h.String(), "why", why)
}

// readRecords reads every record and pack of the remote not read yet.
func (m *gcMarker) readRecords(ctx context.Context, lister InfoLister) error {
	err := lister.ListInfo(ctx, Records, func(o ObjectInfo) error {
		if _, ok := m.read[o.Hash]; ok {
			return nil
		}
		return m.readRecord(ctx, o)
	})
	if err != nil {
		if errors.Is(err, ErrRemoteGCRefused) {
			return err
		}
		return fmt.Errorf("remote gc: records: %w", err)
	}
	return nil
}

// readRecord reads record (or pack) o: the manifests it holds go to the
// spool and the index, its root to the roots.
func (m *gcMarker) readRecord(ctx context.Context, o ObjectInfo) error {
	l := m.l
	limit := max(l.fetchCap(), minFetchCap)
	if o.Size > limit {
		m.skip(Records, o.Hash, fmt.Sprintf("%d bytes, more than this daemon reads (%d)", o.Size, limit))
		return nil
	}
	var b vfs.Blob
	var err error
	if co, ok := l.store.(CappedOpener); ok {
		b, err = co.OpenCapped(ctx, Records, o.Hash, limit)
	} else if b, err = l.store.Open(ctx, Records, o.Hash); err == nil && b.Size() > limit {
		b.Close()
		err = vfs.ErrTooLarge
	}
	switch {
	case errors.Is(err, vfs.ErrNotFound):
		return nil // deleted since the listing
	case errors.Is(err, ErrCorruptObject):
		m.skip(Records, o.Hash, "its content does not match its name")
		return nil
	case errors.Is(err, vfs.ErrTooLarge):
		m.skip(Records, o.Hash, fmt.Sprintf("more than this daemon reads (%d bytes)", limit))
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", o.Hash.Short(), err)
	}
	defer b.Close()
	hw := vfs.NewHasher()
	cr := &countingReader{r: io.NewSectionReader(b, 0, b.Size())}
	br := bufio.NewReaderSize(io.TeeReader(cr, hw), 64<<10)
	whole := func() bool { // the rest read, is the object its name?
		_, err := io.Copy(io.Discard, br)
		return err == nil && vfs.SumHash(hw) == o.Hash
	}
	line, err := readLine(br, 64)
	format := string(line)
	if err != nil {
		m.skip(Records, o.Hash, "not a vfsd record")
		return nil
	}
	var root vfs.Hash
	switch format {
	case recordFormat:
		line, err := readLine(br, gcMaxHead)
		var rec Record
		if err == nil {
			err = unmarshalRecordLine(line, &rec)
		}
		if err != nil || rec.Format != recordFormat {
			m.skip(Records, o.Hash, "a "+recordFormat+" record whose record line does not parse")
			return nil
		}
		root = rec.Root
	case packFormat:
	default:
		if strings.HasPrefix(format, "vfsd-snapshot/") || strings.HasPrefix(format, "vfsd-pack/") {
			if !whole() {
				m.skip(Records, o.Hash, "its content does not match its name")
				return nil
			}
			return fmt.Errorf("%w: %s/%s is a %q object, a format this daemon does not know: a newer vfsd's snapshot may reference any blob. Run remote GC from a daemon that knows it (or, if no vfsd wrote it, delete that object)",
				ErrRemoteGCRefused, Records, o.Hash, format)
		}
		m.skip(Records, o.Hash, "not a vfsd record")
		return nil
	}
	if err := m.readPack(ctx, o.Hash, br, cr, b.Size()); err != nil {
		if errors.Is(err, errNotRecord) {
			m.skip(Records, o.Hash, err.Error())
			return nil
		}
		return err
	}
	if vfs.SumHash(hw) != o.Hash {
		// Its manifests that match their hashes are kept: a manifest is
		// what its hash says, wherever it was found.
		m.skip(Records, o.Hash, "its content does not match its name")
		return nil
	}
	if err := m.room(1); err != nil {
		return err
	}
	m.read[o.Hash] = struct{}{}
	if format == packFormat {
		m.rep.Packs++
		return nil
	}
	if err := m.room(1); err != nil {
		return err
	}
	m.roots = append(m.roots, root)
	m.rep.Snapshots++
	return nil
}

// readPack copies the manifests of the pack in br (the rest of an object of
// size bytes, cr counting what was read of it) to the spool: those that
// match their hashes and are not there yet.
func (m *gcMarker) readPack(ctx context.Context, id vfs.Hash, br *bufio.Reader, cr *countingReader, size int64) error {
	ew := &spoolWriter{f: m.spool}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var h vfs.Hash
		if _, err := io.ReadFull(br, h[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%w: truncated pack", errNotRecord)
		}
		n, err := binary.ReadUvarint(br)
		left := size - cr.n + int64(br.Buffered())
		if err != nil || n > uint64(left) {
			return fmt.Errorf("%w: bad pack entry", errNotRecord)
		}
		if _, ok := m.index[h]; ok {
			if _, err := br.Discard(int(n)); err != nil {
				return fmt.Errorf("%w: truncated pack", errNotRecord)
			}
			continue
		}
		if m.spoolEnd+int64(n) > m.l.opts.GCMaxSpoolBytes {
			return fmt.Errorf("%w: the remote's manifests are more than %d bytes (RemoteOptions.GCMaxSpoolBytes); nothing was deleted", ErrRemoteGCRefused, m.l.opts.GCMaxSpoolBytes)
		}
		hw := vfs.NewHasher()
		ew.off = m.spoolEnd
		if _, err := io.CopyN(io.MultiWriter(ew, hw), br, int64(n)); err != nil {
			if ew.err != nil {
				return fmt.Errorf("remote gc: temporary file: %w", ew.err)
			}
			return fmt.Errorf("%w: truncated pack", errNotRecord)
		}
		if vfs.SumHash(hw) != h {
			m.skip(Records, h, "a manifest in record "+id.Short()+" that does not match its hash")
			continue // the next one is written over it
		}
		if err := m.room(1); err != nil {
			return err
		}
		m.index[h] = gcSpan{off: m.spoolEnd, n: int64(n)}
		m.spoolEnd += int64(n)
	}
}

// mark walks the manifests from the roots not walked yet and from the
// stack, marking the blobs they reference; a manifest not found joins
// missing.
func (m *gcMarker) mark(ctx context.Context) error {
	for _, root := range m.roots {
		if err := m.visit(root); err != nil {
			return err
		}
	}
	m.roots = m.roots[:0]
	for len(m.stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
		span, ok := m.index[h]
		if !ok {
			if err := m.room(1); err != nil {
				return err
			}
			m.missing[h] = struct{}{}
			continue
		}
		if span.n > gcMaxManifest {
			return fmt.Errorf("%w: manifest %s is %d bytes, more than remote GC decodes (%d)", ErrRemoteGCRefused, h, span.n, gcMaxManifest)
		}
		if int64(cap(m.buf)) < span.n {
			m.buf = make([]byte, span.n)
		}
		b := m.buf[:span.n]
		if _, err := m.spool.ReadAt(b, span.off); err != nil {
			return fmt.Errorf("remote gc: temporary file: %w", err)
		}
		err := decodeDir(b, func(_ string, n vfs.Node) error {
			switch {
			case n.IsDir():
				return m.visit(n.Blob)
			case !n.Blob.IsZero():
				if _, ok := m.marked[n.Blob]; !ok {
					if err := m.room(1); err != nil {
						return err
					}
					m.marked[n.Blob] = struct{}{}
				}
			}
			return nil
		})
		if errors.Is(err, ErrRemoteGCRefused) {
			return err
		}
		if err != nil {
			m.skip(Records, h, "a manifest that does not decode ("+err.Error()+"); the blobs after the fault are not marked")
		}
	}
	return nil
}

// visit queues manifest h, unless it was queued already.
func (m *gcMarker) visit(h vfs.Hash) error {
	if _, ok := m.seen[h]; ok {
		return nil
	}
	if err := m.room(1); err != nil {
		return err
	}
	m.seen[h] = struct{}{}
	m.stack = append(m.stack, h)
	return nil
}

// sweep deletes the blobs the remote lists that are neither marked nor
// younger than the grace period, in batches as the listing goes.
func (m *gcMarker) sweep(ctx context.Context, lister InfoLister) error {
	l, rep := m.l, m.rep
	cutoff := time.Now().Add(-l.opts.Grace)
	batch := make([]ObjectInfo, 0, gcDeleteBatch)
	err := lister.ListInfo(ctx, Blobs, func(o ObjectInfo) error {
		rep.Scanned++
		if _, ok := m.marked[o.Hash]; ok {
			return nil
		}
		if o.Modified.After(cutoff) {
			rep.Young++
			return nil
		}
		batch = append(batch, o)
		if len(batch) < cap(batch) {
			return nil
		}
		err := m.deleteAll(ctx, batch)
		batch = batch[:0]
		return err
	})
	if err == nil {
		err = m.deleteAll(ctx, batch)
	}
	if err != nil {
		return fmt.Errorf("remote gc: blobs: %w", err)
	}
	return nil
}

// deleteAll deletes blobs, Parallel at a time; one the remote refuses is
// counted and passed over.
func (m *gcMarker) deleteAll(ctx context.Context, blobs []ObjectInfo) error {
	l, rep := m.l, m.rep
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan ObjectInfo)
	for range min(l.opts.Parallel, len(blobs)) {
		wg.Go(func() {
			for o := range work {
				err := l.store.Delete(ctx, Blobs, o.Hash)
				mu.Lock()
				if err == nil {
					l.forget(Blobs, o.Hash)
					rep.Deleted++
					rep.DeletedBytes += o.Size
				} else if ctx.Err() == nil {
					rep.DeleteFailed++
					if rep.DeleteError == "" {
						rep.DeleteError = err.Error()
					}
					if rep.DeleteFailed <= gcMaxWhy {
						l.log.Warn("remote gc: the remote refused to delete an unreferenced blob; passed over", "blob", o.Hash.String(), "err", err)
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range blobs {
		select {
		case work <- o:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return ctx.Err()
}

// readLine reads a line of at most max bytes, without its newline.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errors.New("line too long")
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// spoolWriter writes at off in f, moving off on, and keeps its error.
type spoolWriter struct {
	f   *os.File
	off int64
	err error
}

func (w *spoolWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
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
