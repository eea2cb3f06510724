package daemon

import (
	"context"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/vfs"
)

// progressFunc receives the progress of a long operation (an import, a
// snapshot's sealing); nil when nobody listens.
type progressFunc func(api.Progress)

// imports adapts f to an import's progress callback (nil for nil).
func (f progressFunc) imports() func(hostmount.Progress) {
	if f == nil {
		return nil
	}
	return func(p hostmount.Progress) {
		f(api.Progress{Phase: p.Phase, Files: p.Files, FilesTotal: p.FilesTotal, Bytes: p.Bytes, BytesTotal: p.BytesTotal})
	}
}

// seals returns ctx under which a snapshot reports its sealing to f
// (phase "seal"): the start, the end, and at most every 100 ms between.
func (f progressFunc) seals(ctx context.Context) context.Context {
	if f == nil {
		return ctx
	}
	var last time.Time // the calls are serialised
	return vfs.WithSealProgress(ctx, func(p vfs.SealProgress) {
		if p.Files != 0 && p.Files != p.FilesTotal && time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		f(api.Progress{Phase: "seal", Files: int64(p.Files), FilesTotal: int64(p.FilesTotal), Bytes: p.Bytes, BytesTotal: p.BytesTotal})
	})
}
