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
// (server-side bytes, a request per window). A
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
	for _, lp := range packs {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := lp.p
		rep.BlobPacks++
		var live []packBlob
		var deadBytes int64
		for _, b := range p.blobs {
			rep.Scanned++
			if _, ok := m.marked[b.hash]; ok {
				live = append(live, b)
			} else {
				deadBytes += b.size
			}
		}
		dead := len(p.blobs) - len(live)
		switch {
		case dead == 0:
			continue
		case lp.mod.After(cutoff):
			rep.Young += dead
			continue
		case len(live) > 0:
			err := m.repack(ctx, ps, p, live)
			if errors.Is(err, errPackGone) {
				continue // another collection got there first
			}
			if err != nil {
				return fmt.Errorf("remote gc: repack %s: %w", p.name.Short(), err)
			}
		}
		// None of its blobs referenced, or the referenced ones in new
		// packs now.
		if err := ps.DeletePack(ctx, p.name); err != nil {
			m.deleteFailed(p.name, err)
			continue
		}
		l.dropPack(p.name)
		if len(live) > 0 {
			rep.PacksRepacked++
		} else {
			rep.PacksDeleted++
		}
		rep.Deleted += dead
		rep.DeletedBytes += deadBytes
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

// repack copies the live blobs of pack p into new packs, reading p by
// window and checking each blob; a blob that does not match its hash is
// skipped (the daemon that has it packs it again at its next push).
func (m *gcMarker) repack(ctx context.Context, ps PackStore, p *remotePack, live []packBlob) error {
	var blobs []packBlob
	var data []byte
	flush := func() error {
		if len(blobs) == 0 {
			return nil
		}
		if err := m.l.storePack(ctx, ps, blobs, data); err != nil {
			return err
		}
		blobs, data = nil, nil
		return nil
	}
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
			if len(blobs) > 0 && (int64(len(data))+b.size > packTargetBytes || len(blobs) == maxPackEntries) {
				if err := flush(); err != nil {
					return err
				}
			}
			blobs = append(blobs, packBlob{hash: b.hash, size: b.size})
			data = append(data, content...)
		}
		i = j
	}
	return flush()
}

// storePack uploads a pack of blobs whose bytes, in order, are data, and
// records it as known right.
func (l *remoteLink) storePack(ctx context.Context, ps PackStore, blobs []packBlob, data []byte) error {
	head, name := encodePackHeader(blobs)
	off := int64(len(head))
	for i := range blobs {
		blobs[i].off = off
		off += blobs[i].size
	}
	info, err := ps.PutPack(ctx, name, off, io.MultiReader(bytes.NewReader(head), bytes.NewReader(data)))
	if err != nil {
		return err
	}
	p := &remotePack{name: name, size: off, mod: time.Now(), tag: etagOf(info.ETag), blobs: blobs}
	l.addPack(p, head)
	for _, b := range blobs {
		l.markGoodIn(objKey{Blobs, b.hash}, b.size, p.tag, true, p)
	}
	return nil
}
