package client

import (
	"context"
	"io"
	"net/http"

	"github.com/vfsd/vfsd/api"
)

// PutBlob uploads content as a blob and returns its reference, usable as
// a write_file blob_ref (POST /v1/blobs).
func (c *Client) PutBlob(ctx context.Context, content io.Reader) (*api.Blob, error) {
	resp, err := c.send(ctx, request{method: http.MethodPost, path: "/v1/blobs", body: content, contentType: "application/octet-stream"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.Blob
	return &out, decodeJSON(resp, &out)
}

// GetBlob opens a blob by reference ("blake3:<hex>", as tools return
// them) (GET /v1/blobs/{ref}). The caller closes the reader.
func (c *Client) GetBlob(ctx context.Context, ref string) (io.ReadCloser, int64, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/v1/blobs/" + esc(ref)})
	if err != nil {
		return nil, 0, err
	}
	return resp.Body, resp.ContentLength, nil
}
