package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// BlobReader is implemented by a Backend that can read its session's
// blobs: the content tools return by reference (blob_ref) when it is too
// large to return inline. NewServer then offers every such blob as an MCP
// resource, vfsd://blobs/<hash> (tools.BlobURI), read with resources/read.
type BlobReader interface {
	// ReadBlob returns up to length bytes of blob ref ("blake3:<hex>")
	// from offset, and the blob's size. A blob the session may not read
	// (one its tools did not return, nor it or the admin upload) answers
	// as one that does not exist: an error for which
	// errors.Is(err, vfs.ErrNotFound) holds.
	ReadBlob(ctx context.Context, ref string, offset, length int64) (data []byte, size int64, err error)
}

// MaxResourceBytes is the most one resources/read returns of a blob; a
// larger blob is read in parts with ?offset=N (and length=M) on its URI.
// One part fits an MCP message whatever its content: JSON escaping at most
// sextuples text, and stdio messages may be 16 MiB.
const MaxResourceBytes = 1 << 20

// blobTemplate is the URI template of the blob resources.
const blobTemplate = tools.BlobURIPrefix + "{hash}{?offset,length}"

// PromptName is the name of the MCP prompt that carries the session's
// prompt section (tools.Render's Prompt, or Options.Instructions).
const PromptName = "workspace"

// addResourcesAndPrompts offers the backend's blobs as resources (when it
// is a BlobReader) and the prompt section as a prompt (when there is one).
func addResourcesAndPrompts(srv *mcp.Server, backend Backend, opts Options) {
	if br, ok := backend.(BlobReader); ok {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:        "blob",
			Title:       "Content a tool returned by reference",
			Description: "Content a tool of this session returned as a blob (blob.uri in its result), too large to return inline. Read it with resources/read; parts of at most 1 MiB, from ?offset=N (length=M for less), the result's _meta saying the size and the next part's URI.",
			URITemplate: blobTemplate,
		}, blobHandler(br))
	}
	if strings.TrimSpace(opts.Instructions) != "" {
		text := opts.Instructions
		desc := fmt.Sprintf("How to use this session's workspace tools (profile %s): the prompt section to put in a system prompt.", opts.Profile)
		srv.AddPrompt(&mcp.Prompt{Name: PromptName, Title: "Using the vfsd workspace", Description: desc},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Description: desc, Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: text}},
				}}, nil
			})
	}
}

// blobHandler serves resources/read of a blob URI.
func blobHandler(br BlobReader) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		ref, offset, length, err := parseBlobURI(uri)
		if err != nil {
			return nil, err
		}
		data, size, err := br.ReadBlob(ctx, ref, offset, length)
		switch {
		case errors.Is(err, vfs.ErrNotFound):
			return nil, mcp.ResourceNotFoundError(uri)
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", uri, err)
		}
		c := &mcp.ResourceContents{URI: uri}
		if text, ok := textPart(data, offset+int64(len(data)) < size); ok {
			c.MIMEType, c.Text = "text/plain; charset=utf-8", text
			data = data[:len(text)]
		} else {
			c.MIMEType, c.Blob = "application/octet-stream", data
		}
		end := offset + int64(len(data))
		meta := mcp.Meta{"blob_ref": ref, "size_bytes": size, "offset": offset, "length": len(data), "truncated": end < size}
		if end < size {
			meta["next_uri"] = fmt.Sprintf("%s?offset=%d", tools.BlobURI(ref), end)
		}
		c.Meta = meta
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
	}
}

// textPart returns data as text when it is UTF-8 (a part that is cut, more
// following, may end within a character: that character is left for the
// next part).
func textPart(data []byte, cut bool) (string, bool) {
	if utf8.Valid(data) {
		return string(data), true
	}
	if cut {
		for k := len(data) - 1; k >= 0 && k >= len(data)-utf8.UTFMax+1; k-- {
			if utf8.Valid(data[:k]) && k > 0 {
				return string(data[:k]), true
			}
		}
	}
	return "", false
}

// parseBlobURI reads vfsd://blobs/<hex>[?offset=N][&length=M].
func parseBlobURI(uri string) (ref string, offset, length int64, err error) {
	bad := func(format string, args ...any) (string, int64, int64, error) {
		return "", 0, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
	}
	rest, ok := strings.CutPrefix(uri, tools.BlobURIPrefix)
	if !ok {
		return bad("%q is not a blob URI (%s<hash>)", uri, tools.BlobURIPrefix)
	}
	hash, query, _ := strings.Cut(rest, "?")
	if _, err := vfs.ParseHash(hash); err != nil {
		return bad("%q is not a blob URI: %s is not a blob's hash (64 hex digits, as in blob_ref after %s)", uri, hash, tools.BlobRefPrefix)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("%q: %v", uri, err)
	}
	length = MaxResourceBytes
	for k, vs := range q {
		n, err := strconv.ParseInt(vs[0], 10, 64)
		switch {
		case k != "offset" && k != "length":
			return bad("%q: unknown parameter %q; use offset and length", uri, k)
		case err != nil || n < 0 || (k == "length" && n == 0):
			return bad("%q: %s must be a positive number of bytes", uri, k)
		case k == "offset":
			offset = n
		default:
			length = min(n, MaxResourceBytes)
		}
	}
	return tools.BlobRefPrefix + hash, offset, length, nil
}

// ReadBlob reads a blob of the Toolset's blob store, which in the daemon
// answers only for the blobs the session may read.
func (b *toolsetBackend) ReadBlob(ctx context.Context, ref string, offset, length int64) ([]byte, int64, error) {
	if b.ts == nil || b.ts.Blobs() == nil {
		return nil, 0, fmt.Errorf("session %s has no blob store: %w", b.session, vfs.ErrNotFound)
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix))
	if err != nil {
		return nil, 0, fmt.Errorf("blob %s: %w", ref, vfs.ErrNotFound)
	}
	blob, err := b.ts.Blobs().Open(ctx, h)
	if err != nil {
		return nil, 0, err
	}
	defer blob.Close()
	return ReadPart(blob, blob.Size(), offset, length)
}

// ReadPart reads up to length bytes of r (of size bytes) from offset: what
// a BlobReader returns.
func ReadPart(r io.ReaderAt, size, offset, length int64) ([]byte, int64, error) {
	if offset >= size {
		return []byte{}, size, nil
	}
	buf := make([]byte, min(length, size-offset))
	n, err := r.ReadAt(buf, offset)
	if n < len(buf) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, fmt.Errorf("read at %d: %w", offset, err)
	}
	return buf, size, nil
}
