package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// uploadPin is how long an uploaded blob is kept from garbage collection
// while nothing references it: the time a caller has to use it (as a
// write_file blob_ref, say).
const uploadPin = time.Hour

// parseBlobRef accepts "blake3:<64 hex>" or the bare hex.
func parseBlobRef(ref string) (vfs.Hash, error) {
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix))
	if err != nil {
		return vfs.Hash{}, apiErr(api.CodeInvalidInput, "%q is not a blob reference: use %s<64 hex digits>, as tools return them", ref, tools.BlobRefPrefix)
	}
	return h, nil
}

// OpenBlob opens blob ref ("blake3:<hex>" or the bare hex) for reading.
// The admin reads any blob; a session's caller those granted to its
// session (see blobGrants), and any other answers as a blob that does not
// exist.
func (d *Daemon) OpenBlob(ctx context.Context, ref string) (vfs.Blob, vfs.Hash, error) {
	h, err := parseBlobRef(ref)
	if err != nil {
		return nil, vfs.Hash{}, err
	}
	var b vfs.Blob
	if p := callerOf(ctx); !p.Admin {
		if e := d.callerEntry(p); e == nil || !d.mayReadBlob(e, h) {
			err = vfs.ErrNotFound
		}
	}
	if err == nil {
		b, err = d.repo.Blobs().Open(ctx, h)
	}
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, h, apiErr(api.CodeNotFound, "no blob %s%s (never stored, collected since nothing referenced it, or not this token's to read: a session token reads the blobs its session uploaded or its tools returned, and those the admin uploaded)", tools.BlobRefPrefix, h)
	}
	if err != nil {
		return nil, h, fmt.Errorf("open blob %s: %w", h.Short(), err)
	}
	return b, h, nil
}

// MaxBlobBytes is the most one upload may hold (Config.MaxBlobBytes).
func (d *Daemon) MaxBlobBytes() int64 { return d.cfg.MaxBlobBytes }

// PutBlob stores what r holds as a blob, durably, and returns its
// reference; the caller's session (or every session, for the admin) may
// read it. The blob is kept from garbage collection for uploadPin, the
// time the caller has to use it. r should stop at MaxBlobBytes.
func (d *Daemon) PutBlob(ctx context.Context, r io.Reader) (*api.Blob, error) {
	h, size, unpin, err := d.repo.Blobs().Put(ctx, r, false)
	if err != nil {
		return nil, fmt.Errorf("store the blob: %w", err)
	}
	time.AfterFunc(uploadPin, unpin)
	if p := callerOf(ctx); p.Admin {
		d.sharedBlobs.add(h)
	} else if e := d.callerEntry(p); e != nil {
		e.blobs.add(h)
	}
	return &api.Blob{BlobRef: tools.BlobRefPrefix + h.String(), SizeBytes: size}, nil
}
