package snapshot

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// Pushing packs (see blobpack.go for the format, remote_packs.go for what
// the daemon knows of the remote's packs).
//
// A push sends in packs, in the snapshot tree's order (so that a reader
// of one directory reads one window), every small blob the remote lacks,
// every small blob the remote has in a pack whose content this daemon does
// not know right and has locally (packed again rather than read back: the
// same bytes either way, and the new pack's content is known), and every
// blob whose pack is too old to rely on (renew; fetched first if not
// local). Blobs over packMaxBlob, and those the remote has as objects of
// their own, go as before. Each blob is hashed as it is streamed into the
// pack; a local copy that does not match its name fails the pack's upload,
// so no pack holds it.

// splitPackable takes out of todo the blobs a push packs, and adds those to
// renew; the rest stays for send. Without a remote that keeps packs,
// nothing is packed and renew is sent as objects of their own.
func (r *Repo) splitPackable(ctx context.Context, todo, renew []pushItem) (rest, toPack []pushItem, err error) {
	if _, ok := r.remote.packStore(); !ok {
		for _, it := range renew {
			rest = append(rest, pushItem{k: it.k, size: it.size})
		}
		return append(todo, rest...), nil, nil
	}
	for _, it := range todo {
		if it.k.ns != Blobs || it.size <= 0 || it.size > packMaxBlob || it.k.h == vfs.EmptyHash || it.check && !it.packed {
			rest = append(rest, it)
			continue
		}
		if it.check {
			// In a pack not known right here: packed again if local,
			// else its size is checked (pushOne).
			if _, err := r.store.Stat(ctx, Blobs, it.k.h); err != nil {
				if !errors.Is(err, vfs.ErrNotFound) {
					return nil, nil, fmt.Errorf("local blob %s: %w", it.k.h.Short(), err)
				}
				if !r.remote.hasCached(it.k.h) {
					rest = append(rest, it)
					continue
				}
			}
		}
		toPack = append(toPack, it)
	}
	return rest, append(toPack, renew...), nil
}

// sendPacks gathers items into packs of about packTargetBytes and uploads
// them, Parallel at a time.
func (r *Repo) sendPacks(ctx context.Context, items []pushItem, rep *PushReport) error {
	if len(items) == 0 {
		return nil
	}
	var groups [][]pushItem
	var cur []pushItem
	var bytes int64
	for _, it := range items {
		if len(cur) > 0 && (bytes+it.size > packTargetBytes || len(cur) == maxPackEntries) {
			groups = append(groups, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, it)
		bytes += it.size
	}
	groups = append(groups, cur)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	work := make(chan []pushItem)
	for range min(r.remote.opts.Parallel, len(groups)) {
		wg.Go(func() {
			for g := range work {
				n, err := r.pushPack(ctx, g)
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
						cancel()
					}
				} else {
					rep.Uploaded++
					rep.UploadedPacks++
					rep.UploadedBlobs += len(g)
					rep.UploadedBytes += n
					for _, it := range g {
						switch {
						case it.check && it.wrong:
							rep.Repaired++
						case it.check:
							rep.Rewritten++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, g := range groups {
		select {
		case work <- g:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// pushPack uploads one pack of items and records it; it returns the
// pack's size.
func (r *Repo) pushPack(ctx context.Context, items []pushItem) (int64, error) {
	l := r.remote
	ps, _ := l.packStore()
	blobs := make([]packBlob, len(items))
	for i, it := range items {
		blobs[i] = packBlob{hash: it.k.h, size: it.size}
	}
	pr := &packReader{ctx: ctx, r: r, items: items}
	defer pr.closeBlob()
	size, err := l.storePack(ctx, ps, blobs, pr)
	if pr.err != nil {
		err = pr.err
	}
	if err != nil {
		return 0, fmt.Errorf("upload a pack of %d blobs to %v: %w", len(items), l.store, err)
	}
	l.uploaded.Add(1)
	return size, nil
}

// packReader streams the blobs of a pack, read from the local store (or
// the pack cache) and hashed on the way; a blob that is not what its name
// says, or gone, fails the read.
type packReader struct {
	ctx   context.Context
	r     *Repo
	items []pushItem
	next  int // the next item to open

	blob   vfs.Blob
	sec    *io.SectionReader
	hasher hash.Hash
	item   pushItem
	err    error
}

func (p *packReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	for p.sec == nil {
		if p.next == len(p.items) {
			return 0, io.EOF
		}
		if err := p.openNext(); err != nil {
			p.err = err
			return 0, err
		}
	}
	n, err := p.sec.Read(b)
	p.hasher.Write(b[:n])
	if err == io.EOF {
		if got := vfs.SumHash(p.hasher); got != p.item.k.h {
			p.err = fmt.Errorf("blob %s: the local copy hashes to %s: %w", p.item.k.h.Short(), got.Short(), ErrCorruptObject)
			return n, p.err
		}
		p.closeBlob()
		err = nil
	} else if err != nil {
		p.err = fmt.Errorf("read local blob %s: %w", p.item.k.h.Short(), err)
		return n, p.err
	}
	return n, nil
}

// openNext opens the next blob to stream.
func (p *packReader) openNext() error {
	it := p.items[p.next]
	p.next++
	var b vfs.Blob
	var err error
	if it.renew {
		b, err = p.r.openObject(p.ctx, Blobs, it.k.h) // fetched if not local
	} else {
		b, err = p.r.openLocalObject(p.ctx, Blobs, it.k.h)
		if errors.Is(err, vfs.ErrNotLocal) || errors.Is(err, vfs.ErrNotFound) {
			err = fmt.Errorf("upload blob %s: %w", it.k.h.Short(), errMovedMeanwhile)
		}
	}
	if err != nil {
		return err
	}
	if b.Size() != it.size {
		b.Close()
		return fmt.Errorf("blob %s: the local copy is %d bytes, the snapshot says %d: %w", it.k.h.Short(), b.Size(), it.size, ErrCorruptObject)
	}
	p.blob, p.item = b, it
	p.sec = io.NewSectionReader(b, 0, it.size)
	p.hasher = vfs.NewHasher()
	return nil
}

func (p *packReader) closeBlob() {
	if p.blob != nil {
		p.blob.Close()
	}
	p.blob, p.sec = nil, nil
}
