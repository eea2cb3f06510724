package snapshot

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Opening a local snapshot by its head.
//
// A record in the local store is opened by its head alone: Get reads the
// format line and the Record's JSON line (a first chunk of headChunk bytes,
// more only if the JSON line is longer), and the pack behind them is read on
// demand. A manifest not yet in the repository's index is found through the
// record's pack index (Record.PackIndex, see packindex.go: one ReadAt of its
// entry's header to confirm the hash, then one of the manifest). A record
// written before pack indexes, or whose index is unusable, is found by
// scanning
// the pack's entry headers ([hash][uvarint length]) from where the last scan
// stopped, reading windows of scanWindow bytes with ReadAt and jumping over
// any data that lies beyond the window, and stopping at the wanted hash;
// every header passed on the way is indexed. Before that scan, the last
// scanWindow bytes of the object (read once) and the scan's current window
// are searched for the wanted hash followed by a length and data that hash
// to it: a pack is written children first, so its end holds the root's
// manifest and the directories written last, which a scan from the start
// reaches only after reading the whole pack. The manifest itself is then
// read with one ReadAt. A lazily loaded snapshot's local ancestors (whose
// records hold the manifests of its unchanged directories) are opened the
// same way.
//
// What is verified when:
//   - a manifest read on demand is hashed and compared with its hash before
//     it is used, synchronously (as every manifest read is);
//   - the record's head (the Record) cannot be verified alone: the whole
//     object is read and hashed once per Repo, in the background, starting
//     verifyDelay (100 ms) after Get opened it, one record at a time per
//     process, so that the check does not compete with the first reads.
//     On a mismatch the record is marked corrupt and logged (slog): from
//     then on Get of it, every manifest read of its snapshot's tree (a
//     directory the tree has not read yet), and every read of a manifest
//     stored in it that is not already in memory, fail with
//     ErrCorruptObject. Uses between Get and the end of that check rely on
//     the unverified Record (its root, totals and lineage) and on manifests
//     that were themselves verified. Close stops a check not finished: a
//     Repo closed before it ended (a command that reads one file and exits
//     within verifyDelay) has used the unverified head and verified
//     manifests only; the next Repo to open the record checks it again.
//   - a record small enough to come whole in the first chunk, a manifest
//     pack, and a record that is not local (fetched from the remote) are
//     read whole and verified before use, as before.

const (
	// headChunk is what Get reads first of a local record.
	headChunk = 64 << 10
	// scanWindow is what a scan of a pack's entry headers reads at once.
	scanWindow = 64 << 10
)

// headRecord is a local record opened by its head: the part of its pack not
// yet indexed is scanned on demand.
type headRecord struct {
	id   vfs.Hash
	size int64

	mu     sync.Mutex // held while scanning
	next   int64      // offset of the first pack entry not indexed yet
	win    []byte     // the last window read, at winOff
	winOff int64
	tail   []byte     // the object's last scanWindow bytes, once read
	packAt int64      // where the pack starts
	count  int        // entries indexed so far
	done   bool       // every entry indexed
	table  *packTable // the record's pack index, if it has a usable one

	bad atomic.Bool // found corrupt: every later use fails
}

// openHead opens local record h by its head. ok is false when h is not a
// record that can be opened so (not local, a manifest pack, or small
// enough to read whole): the caller reads it whole — or, when whole is
// set, uses whole, the object read whole and verified.
func (r *Repo) openHead(ctx context.Context, h vfs.Hash) (rec Record, hr *headRecord, ok bool, whole []byte, err error) {
	r.mu.Lock()
	hr = r.heads[h]
	bad := r.corrupt[h]
	r.mu.Unlock()
	if bad {
		return rec, nil, false, nil, fmt.Errorf("snapshot record %s: %w", h.Short(), ErrCorruptObject)
	}
	b, err := r.store.Open(ctx, Records, h)
	if err != nil {
		if errors.Is(err, vfs.ErrNotFound) {
			return rec, nil, false, nil, nil // remote, or gone: the whole path says which
		}
		return rec, nil, false, nil, err
	}
	defer b.Close()
	size := b.Size()
	n := int64(headChunk)
	var buf []byte
	for {
		if n > size {
			n = size
		}
		buf = make([]byte, n)
		if _, err := b.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			return rec, nil, false, nil, fmt.Errorf("read snapshot record %s: %w", h.Short(), err)
		}
		if n == size {
			// All of it: verified here, used whole.
			if vfs.HashOf(buf) != h {
				return rec, nil, false, nil, fmt.Errorf("object %s: %w", h.Short(), ErrCorruptObject)
			}
			return rec, nil, false, buf, nil
		}
		if isPack(buf) {
			return rec, nil, false, nil, nil
		}
		rec, packOff, herr := decodeRecordHead(buf)
		if herr == nil {
			if hr == nil {
				hr = &headRecord{id: h, size: size, next: int64(packOff), packAt: int64(packOff), win: buf, winOff: 0,
					table: decodePackIndex(rec.PackIndex, int64(packOff), size)}
			}
			rec.PackIndex = nil
			return rec, hr, true, nil, nil
		}
		if !errors.Is(herr, errShortHead) {
			return rec, nil, false, nil, fmt.Errorf("snapshot record %s: %w", h.Short(), herr)
		}
		n *= 4
	}
}

// keepHead registers hr as the repository's head-opened record of its ID,
// returning the one registered first, and starts its background check.
func (r *Repo) keepHead(hr *headRecord) *headRecord {
	r.mu.Lock()
	if cur := r.heads[hr.id]; cur != nil {
		hr = cur
	} else {
		r.heads[hr.id] = hr
	}
	r.mu.Unlock()
	r.verifyInBackground(hr)
	return hr
}

// errShortHead says a record head needs more bytes than were read.
var errShortHead = errors.New("record head goes on beyond what was read")

// decodeRecordHead parses the format line and the Record line at the start
// of a record object, returning the Record and the offset of its pack.
// It answers errShortHead when b ends before the Record line does.
func decodeRecordHead(b []byte) (Record, int, error) {
	var rec Record
	prefix := []byte(recordFormat + "\n")
	if len(b) < len(prefix) {
		if bytes.HasPrefix(prefix, b) {
			return rec, 0, errShortHead
		}
		return rec, 0, errNotRecord
	}
	if !bytes.HasPrefix(b, prefix) {
		return rec, 0, errNotRecord
	}
	rest := b[len(prefix):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return rec, 0, errShortHead
	}
	if err := unmarshalRecordLine(rest[:nl], &rec); err != nil || rec.Format != recordFormat {
		return rec, 0, errNotRecord
	}
	return rec, len(prefix) + nl + 1, nil
}

// packIndexField is how the pack index ends a Record line: the encoder
// writes Record.PackIndex, its last field, as base64.
const packIndexField = `,"pack_index":"`

// unmarshalRecordLine decodes a Record line as json.Unmarshal does, but
// takes a pack index ending the line out before the JSON decoder sees it
// and decodes its base64 directly: most of a large record's line is its
// index, which the JSON scanner reads byte by byte (0.09 ms of a 50,000-
// file record's line, against 0.01 ms without it). Anything else — an
// index not last, or not plain base64, or a line the cut makes invalid —
// goes to json.Unmarshal whole.
func unmarshalRecordLine(line []byte, rec *Record) error {
	i := bytes.LastIndex(line, []byte(packIndexField))
	if i < 0 || i+len(packIndexField) > len(line)-2 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return json.Unmarshal(line, rec)
	}
	enc := line[i+len(packIndexField) : len(line)-2]
	index := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Strict().Decode(index, enc)
	if err != nil || bytes.ContainsAny(enc, "\\\"\r\n") {
		return json.Unmarshal(line, rec)
	}
	if before := bytes.TrimRight(line[:i], " \t\r\n"); len(before) == 0 || before[len(before)-1] == '{' {
		// "{,…": cut there, the line would become "{}", valid where
		// the whole is not.
		return json.Unmarshal(line, rec)
	}
	rest := append(line[:i:i], '}') // a copy: line is the caller's
	var r Record
	if err := json.Unmarshal(rest, &r); err != nil {
		return json.Unmarshal(line, rec)
	}
	r.PackIndex = index[:n]
	*rec = r
	return nil
}

// scanTo indexes the entries of hr's pack from where the last scan stopped
// until it meets manifest want (or, with want zero, to the end), and
// reports whether it met it.
func (r *Repo) scanTo(ctx context.Context, hr *headRecord, want vfs.Hash) (bool, error) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.done {
		return false, nil
	}
	var blob vfs.Blob
	defer func() {
		if blob != nil {
			blob.Close()
		}
	}()
	open := func() error {
		if blob == nil {
			b, err := r.store.Open(ctx, Records, hr.id)
			if err != nil {
				return fmt.Errorf("snapshot record %s: %w", hr.id.Short(), err)
			}
			blob = b
		}
		return nil
	}
	if want != (vfs.Hash{}) && hr.table != nil {
		// The index knows the hash by its prefix only: the entry's header
		// must name want in full (a prefix match alone may be another
		// manifest, and want may be in another record).
		if slot, ok := hr.table.find(want); ok {
			if err := open(); err != nil {
				return false, err
			}
			var head vfs.Hash
			at := slot.off - int64(uvarintLen(uint64(slot.n))) - vfs.HashSize
			if _, err := blob.ReadAt(head[:], at); err != nil {
				return false, fmt.Errorf("read snapshot record %s: %w", hr.id.Short(), err)
			}
			if head == want {
				r.mu.Lock()
				if _, ok := r.index[want]; !ok {
					r.index[want] = manifestLoc{record: hr.id, off: int(slot.off), n: slot.n}
				}
				r.mu.Unlock()
				return true, nil
			}
			// Another manifest with want's prefix (want is in another
			// record), or an index that lies: the search below decides.
		}
	}
	if want != (vfs.Hash{}) {
		// A pack is written children first, so its last bytes hold the
		// root's manifest and those of the last directories written:
		// look there before scanning from the start.
		if hr.tail == nil {
			if err := open(); err != nil {
				return false, err
			}
			off := max(hr.packAt, hr.size-scanWindow)
			t := make([]byte, hr.size-off)
			if _, err := blob.ReadAt(t, off); err != nil && !errors.Is(err, io.EOF) {
				return false, fmt.Errorf("read snapshot record %s: %w", hr.id.Short(), err)
			}
			hr.tail = t
		}
		if r.findIn(hr, hr.tail, hr.size-int64(len(hr.tail)), want) ||
			(hr.win != nil && r.findIn(hr, hr.win, hr.winOff, want)) {
			return true, nil
		}
	}
	// at returns the bytes of the object from off on that the window
	// holds, reading a new window there if it holds fewer than need.
	at := func(off int64, need int) ([]byte, error) {
		if off >= hr.winOff && off+int64(need) <= hr.winOff+int64(len(hr.win)) {
			return hr.win[off-hr.winOff:], nil
		}
		if err := open(); err != nil {
			return nil, err
		}
		n := int64(scanWindow)
		if off+n > hr.size {
			n = hr.size - off
		}
		w := hr.win
		if int64(cap(w)) < n || hr.winOff == 0 {
			w = make([]byte, scanWindow) // not the head: Get's callers may hold it
		}
		w = w[:n]
		if _, err := blob.ReadAt(w, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read snapshot record %s: %w", hr.id.Short(), err)
		}
		hr.win, hr.winOff = w, off
		return w, nil
	}
	for hr.next < hr.size {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		need := vfs.HashSize + binary.MaxVarintLen64
		if rem := hr.size - hr.next; rem < int64(need) {
			need = int(rem)
		}
		b, err := at(hr.next, need)
		if err != nil {
			return false, err
		}
		if len(b) < vfs.HashSize {
			return false, r.markCorrupt(hr.id, "truncated pack")
		}
		var h vfs.Hash
		copy(h[:], b)
		n, k := binary.Uvarint(b[vfs.HashSize:])
		off := hr.next + int64(vfs.HashSize+k)
		if k <= 0 || n > uint64(hr.size-off) {
			return false, r.markCorrupt(hr.id, "bad pack entry")
		}
		hr.next = off + int64(n)
		hr.count++
		r.mu.Lock()
		if _, ok := r.index[h]; !ok {
			r.index[h] = manifestLoc{record: hr.id, off: int(off), n: int(n)}
		}
		r.mu.Unlock()
		if h == want && want != (vfs.Hash{}) {
			return true, nil
		}
	}
	hr.done, hr.win, hr.tail = true, nil, nil
	r.mu.Lock()
	r.indexed[hr.id] = true
	r.mu.Unlock()
	return false, nil
}

// findIn looks for manifest want in w, the bytes of hr's object at off:
// any place where want's 32 bytes are followed by a length and data that
// hash to want holds that manifest, whether or not the forward scan has
// reached it (the hash check makes it so). It indexes what it finds.
func (r *Repo) findIn(hr *headRecord, w []byte, off int64, want vfs.Hash) bool {
	for i := 0; ; {
		j := bytes.Index(w[i:], want[:])
		if j < 0 {
			return false
		}
		p := i + j + vfs.HashSize
		i += j + 1
		n, k := binary.Uvarint(w[p:])
		if k <= 0 || n > uint64(len(w)-p-k) {
			continue
		}
		if off+int64(p) < hr.packAt {
			continue
		}
		data := w[p+k : p+k+int(n)]
		if vfs.HashOf(data) != want {
			continue
		}
		r.mu.Lock()
		if _, ok := r.index[want]; !ok {
			r.index[want] = manifestLoc{record: hr.id, off: int(off) + p + k, n: int(n)}
		}
		r.mu.Unlock()
		return true
	}
}

// headCount returns how many manifests hr's pack holds, scanning what is left
// of it.
func (r *Repo) headCount(ctx context.Context, hr *headRecord) (int, error) {
	if hr.table != nil {
		return hr.table.len(), nil
	}
	if _, err := r.scanTo(ctx, hr, vfs.Hash{}); err != nil {
		return 0, err
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return hr.count, nil
}

// readManifestAt reads manifest want where loc says it is in a local
// record, with one ReadAt, and checks it against its hash.
func (r *Repo) readManifestAt(ctx context.Context, loc manifestLoc, want vfs.Hash) ([]byte, error) {
	b, err := r.store.Open(ctx, Records, loc.record)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	buf := make([]byte, loc.n)
	if _, err := b.ReadAt(buf, int64(loc.off)); err != nil && !(errors.Is(err, io.EOF) && loc.off+loc.n == int(b.Size())) {
		return nil, fmt.Errorf("manifest %s: read record %s: %w", want.Short(), loc.record.Short(), err)
	}
	if vfs.HashOf(buf) != want {
		return nil, fmt.Errorf("manifest %s in record %s: %w", want.Short(), loc.record.Short(), ErrCorruptObject)
	}
	return buf, nil
}

// markCorrupt records that Records object id does not hold what its hash
// says, logs it and returns the error its uses get.
func (r *Repo) markCorrupt(id vfs.Hash, why string) error {
	r.mu.Lock()
	first := !r.corrupt[id]
	r.corrupt[id] = true
	if hr := r.heads[id]; hr != nil {
		hr.bad.Store(true)
	}
	delete(r.snaps, id.String())
	r.mu.Unlock()
	if first {
		slog.Error("snapshot record is corrupt; restore it from a copy or delete the snapshot", "record", id.String(), "why", why)
	}
	return fmt.Errorf("snapshot record %s: %s: %w", id.Short(), why, ErrCorruptObject)
}

// isCorrupt reports whether Records object id was found corrupt.
func (r *Repo) isCorrupt(id vfs.Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.corrupt[id]
}

// verifyInBackground hashes the whole of local record hr once, unless a
// check of it is running or done, marking it corrupt on a mismatch.
func (r *Repo) verifyInBackground(hr *headRecord) {
	if skipVerify.Load() {
		return
	}
	r.mu.Lock()
	if r.closed || r.verifying[hr.id] {
		r.mu.Unlock()
		return
	}
	r.verifying[hr.id] = true
	ctx := r.bgCtx
	r.bg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.bg.Done()
		err := r.waitToVerify(ctx)
		if err == nil {
			err = r.verifyObject(ctx, hr.id)
			<-verifySlots
		}
		switch {
		case err == nil:
			notifyVerified(hr.id, nil)
		case errors.Is(err, ErrCorruptObject):
			r.markCorrupt(hr.id, "its content does not match its hash")
			notifyVerified(hr.id, err)
		default:
			// Stopped (Close) or unreadable: the next Repo checks it again.
			r.mu.Lock()
			delete(r.verifying, hr.id)
			r.mu.Unlock()
			notifyVerified(hr.id, err)
		}
	}()
}

// verifyDelay is how long a background check waits before it starts, so
// that it does not compete with the first reads of the snapshot opened;
// verifySlots lets one check run at a time in the process, so that
// opening many snapshots (a daemon restart) reads one record at a time.
var (
	verifyDelay = 100 * time.Millisecond
	verifySlots = make(chan struct{}, 1)
)

// waitToVerify waits verifyDelay, then for a free slot (which the caller
// gives back), or for ctx to end.
func (r *Repo) waitToVerify(ctx context.Context) error {
	t := time.NewTimer(verifyDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case verifySlots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Test hooks: verifyHook, when set, hears of every background check's
// end; skipVerify starts none (tests that count the bytes Get reads).
var (
	verifyHook atomic.Pointer[func(id vfs.Hash, err error)]
	skipVerify atomic.Bool
)

func notifyVerified(id vfs.Hash, err error) {
	if f := verifyHook.Load(); f != nil {
		(*f)(id, err)
	}
}

// verifyObject reads local record id whole, hashing it as it goes.
func (r *Repo) verifyObject(ctx context.Context, id vfs.Hash) error {
	b, err := r.store.Open(ctx, Records, id)
	if err != nil {
		return err
	}
	defer b.Close()
	hw := vfs.NewHasher()
	buf := make([]byte, 256<<10)
	for off := int64(0); off < b.Size(); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := b.ReadAt(buf[:min(int64(len(buf)), b.Size()-off)], off)
		hw.Write(buf[:n])
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off == b.Size()) {
			return err
		}
	}
	var got vfs.Hash
	copy(got[:], hw.Sum(nil))
	if got != id {
		return fmt.Errorf("record %s: %w", id.Short(), ErrCorruptObject)
	}
	return nil
}
