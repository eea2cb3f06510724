//go:build linux

package overlay

import (
	"runtime"
	"sync"

	"github.com/vfsd/vfsd/vfs"
)

// storedContent is an upper file's content stored as a blob by prestore.
type storedContent struct {
	blob  vfs.Hash
	size  int64
	enc   vfs.Encoding
	unpin func()
}

// prestore stores the content of the upper files apply will store, several
// at a time, before apply changes the session one entry after another: an
// ingest of 50,000 new files (npm install) hashes and stores them on every
// core, outside the session's lock, where apply stored one at a time. Each
// file is read through a descriptor beneath the upper root checked to be
// the node listed (openContent), and stored by the blob store's PutFile: a
// clone where the filesystem shares extents, a copy otherwise. The files
// stay the kernel's, which programs may still write: they are never linked
// into the store. Files apply will not store (unchanged since hashed,
// metadata-only copy-ups, hard links) are left to it, as are files whose
// content could not be stored here (apply stores them itself, and reports
// what fails).
func (in *ingester) prestore() error {
	fs, ok := in.m.repo.Blobs().(vfs.FileBlobStore)
	if !ok {
		return nil
	}
	t := in.m.s.Tree()
	var todo []*upperEntry
	for _, e := range in.all {
		if e.kind != vfs.KindFile || e.metacopy || e.st.Nlink > 1 || in.refused.covers(e.p) {
			continue
		}
		n, ok, err := t.Lookup(e.p)
		if err != nil {
			return err
		}
		if in.unchanged(e, n, ok) {
			continue
		}
		todo = append(todo, e)
	}
	if len(todo) < 2 {
		return nil // apply stores it as fast
	}
	work := make(chan *upperEntry)
	var wg sync.WaitGroup
	for range min(len(todo), 2*runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for e := range work {
				if in.ctx.Err() != nil {
					continue
				}
				f, err := in.openContent(e)
				if err != nil || f == nil {
					continue // apply tries again, and reports the error
				}
				sn := &vfs.Sniffer{}
				h, size, unpin, err := fs.PutFile(in.ctx, f, vfs.PutFileOptions{Deferred: true, Observe: sn})
				f.Close()
				if err != nil {
					continue
				}
				e.stored = &storedContent{blob: h, size: size, enc: sn.Encoding(), unpin: unpin}
			}
		})
	}
	for _, e := range todo {
		work <- e
	}
	close(work)
	wg.Wait()
	return in.ctx.Err()
}

// releaseStored unpins the blobs prestore stored, once apply referenced
// them (or left them unused).
func (in *ingester) releaseStored() {
	for _, e := range in.all {
		if e.stored != nil {
			e.stored.unpin()
			e.stored = nil
		}
	}
}
