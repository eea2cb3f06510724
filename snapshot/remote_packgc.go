package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// Remote garbage collection of packs, after the marking (RemoteGC).
//
// The rule is the blobs' rule, applied per packed blob: a blob is dropped
// only when no record references it and its pack is older than the grace
// period. A pack none of whose blobs is referenced is deleted whole; any
// other pack holding such a blob is repacked: its referenced blobs are read
// (by window, each checked against its hash), written to new packs, and the
// old pack deleted only after the new ones are stored. So what a deleted
// snapshot alone held is gone from the bucket after the grace period, as
// with blobs of their own, at the cost of copying the rest of its packs
// (server-side bytes, a request per window). Small packs past the grace
// period (under a quarter of a full one, from small pushes) are merged,
// once there are packMergeAtLeast of them. A
// push relies on a packed blob only if its parent's record references it
// (so it is marked, and kept in the new pack) or its pack is younger than
// half the grace period (so this collection leaves the pack alone);
// otherwise it packs the blob again itself. A reader that finds a pack
// gone lists the packs again and reads the new one.
//
// Objects under the packs' prefix that are no pack this daemon reads are
// reported (Skipped) and left alone.

// sweepPacks drops the packs' unreferenced blobs past the grace period.
func (m *gcMarker) sweepPacks(ctx context.Context) error {
	l, rep := m.l, m.rep
	ps, ok := l.packStore()
	if !ok {
		return nil
	}
	if err := l.refreshPacks(ctx, time.Time{}); err != nil {
		return fmt.Errorf("remote gc: %w", err)
	}
	type listed struct {
		p   *remotePack
		mod time.Time
	}
	x := l.packs
	x.mu.Lock()
	packs := make([]listed, 0, len(x.packs))
	for _, p := range x.packs {
		packs = append(packs, listed{p, p.mod})
	}
	var foreign []ObjectInfo
	for _, o := range x.foreign {
		foreign = append(foreign, o)
	}
	x.mu.Unlock()
	for _, o := range foreign {
		m.skip("packs", o.Hash, "not a pack this daemon reads (another party's, or a newer vfsd's); left alone")
	}
	cutoff := time.Now().Add(-l.opts.Grace)
	var rewrite, small []rewriteItem
	for _, lp := range packs {
		p := lp.p
		rep.BlobPacks++
		it := rewriteItem{p: p}
		for _, b := range p.blobs {
			rep.Scanned++
			if _, ok := m.marked[b.hash]; ok {
				it.live = append(it.live, b)
			} else {
				it.dead++
				it.deadBytes += b.size
			}
		}
		switch {
		case lp.mod.After(cutoff):
			rep.Young += it.dead
		case it.dead > 0:
			rewrite = append(rewrite, it)
		case p.size < packSmallBytes:
			small = append(small, it)
		}
	}
	// Small packs (many small pushes) are merged once there are enough of
	// them to be worth a request each to every daemon that lists them.
	if len(small) >= packMergeAtLeast {
		rewrite = append(rewrite, small...)
	}
	return m.rewritePacks(ctx, ps, rewrite)
}

// Merging small packs.
const (
	// packSmallBytes: a pack under this is merged with others.
	packSmallBytes = packTargetBytes / 4
	// packMergeAtLeast is how many small packs past the grace period
	// remote GC waits for before it merges them.
	packMergeAtLeast = 4
)

// rewriteItem is a pack remote GC deletes, its referenced blobs (live)
// copied to new packs first.
type rewriteItem struct {
	p         *remotePack
	live      []packBlob
	dead      int
	deadBytes int64
}

// rewritePacks copies the referenced blobs of packs into new packs, then
// deletes the old ones: all of them only once every new pack is stored.
func (m *gcMarker) rewritePacks(ctx context.Context, ps PackStore, packs []rewriteItem) error {
	l, rep := m.l, m.rep
	w := &packWriter{l: l, ps: ps}
	var done []rewriteItem
	for _, it := range packs {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := m.copyLive(ctx, ps, it.p, it.live, w)
		if errors.Is(err, errPackGone) {
			continue // another collection got there first
		}
		if err != nil {
			return fmt.Errorf("remote gc: repack %s: %w", it.p.name.Short(), err)
		}
		done = append(done, it)
	}
	if err := w.flush(ctx); err != nil {
		return fmt.Errorf("remote gc: store a new pack: %w", err)
	}
	for _, it := range done {
		if err := ps.DeletePack(ctx, it.p.name); err != nil {
			m.deleteFailed(it.p.name, err)
			continue
		}
		l.dropPack(it.p.name)
		if len(it.live) > 0 {
			rep.PacksRepacked++
		} else {
			rep.PacksDeleted++
		}
		rep.Deleted += it.dead
		rep.DeletedBytes += it.deadBytes
	}
	return nil
}

// deleteFailed counts a pack the remote refused to delete.
func (m *gcMarker) deleteFailed(name vfs.Hash, err error) {
	rep := m.rep
	rep.DeleteFailed++
	if rep.DeleteError == "" {
		rep.DeleteError = err.Error()
	}
	if rep.DeleteFailed <= gcMaxWhy {
		m.l.log.Warn("remote gc: the remote refused to delete a pack; passed over", "pack", name.String(), "err", err)
	}
}

// copyLive reads the live blobs of pack p by window, checks each and adds
// it to w; a blob that does not match its hash is skipped (the daemon that
// has it packs it again at its next push).
func (m *gcMarker) copyLive(ctx context.Context, ps PackStore, p *remotePack, live []packBlob, w *packWriter) error {
	for i := 0; i < len(live); {
		start := live[i].off
		j := i + 1
		for j < len(live) && live[j].off+live[j].size-start <= packWindowBytes {
			j++
		}
		end := live[j-1].off + live[j-1].size
		buf, _, err := ps.ReadPack(ctx, p.name, start, end-start)
		if errors.Is(err, vfs.ErrNotFound) {
			return errPackGone
		}
		if err != nil {
			return err
		}
		for _, b := range live[i:j] {
			content := buf[b.off-start : b.off-start+b.size]
			if vfs.HashOf(content) != b.hash {
				m.skip("packs", p.name, fmt.Sprintf("blob %s in it does not match its hash; not kept", b.hash.Short()))
				continue
			}
			if err := w.add(ctx, b.hash, content); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// packWriter gathers blobs into packs of about packTargetBytes and stores
// each when full (and the last at flush).
type packWriter struct {
	l     *remoteLink
	ps    PackStore
	blobs []packBlob
	data  []byte
	seen  map[vfs.Hash]bool // a blob in two merged packs is written once
}

func (w *packWriter) add(ctx context.Context, h vfs.Hash, content []byte) error {
	if w.seen[h] {
		return nil
	}
	if len(w.blobs) > 0 && (int64(len(w.data))+int64(len(content)) > packTargetBytes || len(w.blobs) == maxPackEntries) {
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	if w.seen == nil {
		w.seen = map[vfs.Hash]bool{}
	}
	w.seen[h] = true
	w.blobs = append(w.blobs, packBlob{hash: h, size: int64(len(content))})
	w.data = append(w.data, content...)
	return nil
}

func (w *packWriter) flush(ctx context.Context) error {
	if len(w.blobs) == 0 {
		return nil
	}
	if _, err := w.l.storePack(ctx, w.ps, w.blobs, bytes.NewReader(w.data)); err != nil {
		return err
	}
	w.blobs, w.data = nil, nil
	return nil
}

// storePack uploads a pack of blobs (hash and size each, in order) whose
// bytes, in that order, body reads, and records it as known right; it
// returns the pack's size.
func (l *remoteLink) storePack(ctx context.Context, ps PackStore, blobs []packBlob, body io.Reader) (int64, error) {
	head, name := encodePackHeader(blobs)
	size := int64(len(head))
	for i := range blobs {
		blobs[i].off = size
		size += blobs[i].size
	}
	info, err := ps.PutPack(ctx, name, size, io.MultiReader(bytes.NewReader(head), body))
	if err != nil {
		return 0, err
	}
	p := &remotePack{name: name, size: size, mod: time.Now(), tag: etagOf(info.ETag), blobs: blobs}
	l.addPack(p, head)
	for _, b := range blobs {
		l.markGoodIn(objKey{Blobs, b.hash}, b.size, p.tag, true, p)
	}
	return size, nil
}
