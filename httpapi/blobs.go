package httpapi

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/vfsd/vfsd/api"
)

// handleGetBlob sends a blob's content (Range requests work), if the
// caller may read it (daemon.Daemon.OpenBlob).
func (s *Server) handleGetBlob(w http.ResponseWriter, r *http.Request) error {
	b, h, err := s.d.OpenBlob(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	defer b.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", strconv.Quote(h.String()))
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(b, 0, b.Size()))
	return nil
}

// handlePutBlob stores the request body as a blob, durably, and returns
// its reference.
//
// A body over Config.MaxBlobBytes is refused with too_large: at once when
// its Content-Length says so (nothing is read), else as soon as the limit
// is crossed (nothing is stored).
func (s *Server) handlePutBlob(w http.ResponseWriter, r *http.Request) error {
	max := s.d.MaxBlobBytes()
	if r.ContentLength > max {
		// Do not read the body, and do not keep the connection: the client
		// is still sending it.
		w.Header().Set("Connection", "close")
		return apiErr(api.CodeTooLarge, "the blob is %d bytes; uploads are at most %d (vfsd serve --max-blob-bytes): send less, or write it in parts", r.ContentLength, max)
	}
	blob, err := s.d.PutBlob(r.Context(), http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, blob)
	return nil
}
