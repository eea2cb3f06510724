package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// handleGetBlob sends a blob's content (Range requests work). The admin
// reads any blob; a session token those granted to its session (see
// blobGrants), and any other answers as a blob that does not exist.
func (d *Daemon) handleGetBlob(w http.ResponseWriter, r *http.Request) error {
	h, err := parseBlobRef(r.PathValue("ref"))
	if err != nil {
		return err
	}
	var b vfs.Blob
	if p := principalOf(r.Context()); p != nil && !p.admin {
		if e := d.principalEntry(p); e == nil || !d.mayReadBlob(e, h) {
			err = vfs.ErrNotFound
		}
	}
	if err == nil {
		b, err = d.repo.Blobs().Open(r.Context(), h)
	}
	if errors.Is(err, vfs.ErrNotFound) {
		return apiErr(api.CodeNotFound, "no blob %s%s (never stored, collected since nothing referenced it, or not this token's to read: a session token reads the blobs its session uploaded or its tools returned, and those the admin uploaded)", tools.BlobRefPrefix, h)
	}
	if err != nil {
		return fmt.Errorf("open blob %s: %w", h.Short(), err)
	}
	defer b.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", strconv.Quote(h.String()))
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(b, 0, b.Size()))
	return nil
}

// handlePutBlob stores the request body as a blob, durably, and returns
// its reference. The blob is kept from garbage collection for uploadPin.
//
// A body over Config.MaxBlobBytes is refused with too_large: at once when
// its Content-Length says so (nothing is read), else as soon as the limit
// is crossed (nothing is stored).
func (d *Daemon) handlePutBlob(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > d.cfg.MaxBlobBytes {
		// Do not read the body, and do not keep the connection: the client
		// is still sending it.
		w.Header().Set("Connection", "close")
		return apiErr(api.CodeTooLarge, "the blob is %d bytes; uploads are at most %d (vfsd serve --max-blob-bytes): send less, or write it in parts", r.ContentLength, d.cfg.MaxBlobBytes)
	}
	body := http.MaxBytesReader(w, r.Body, d.cfg.MaxBlobBytes)
	h, size, unpin, err := d.repo.Blobs().Put(r.Context(), body, false)
	if err != nil {
		return fmt.Errorf("store the blob: %w", err)
	}
	time.AfterFunc(uploadPin, unpin)
	if p := principalOf(r.Context()); p == nil || p.admin {
		d.sharedBlobs.add(h)
	} else if e := d.principalEntry(p); e != nil {
		e.blobs.add(h)
	}
	writeJSON(w, http.StatusCreated, api.Blob{BlobRef: tools.BlobRefPrefix + h.String(), SizeBytes: size})
	return nil
}
