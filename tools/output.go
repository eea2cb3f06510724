package tools

import (
	"bytes"
	"context"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/vfs"
)

// OutputMode says how a tool returns a payload.
type OutputMode string

// The output modes.
const (
	// OutputAuto returns small payloads inline and large ones as a blob.
	OutputAuto OutputMode = "auto"
	// OutputRequireInline returns the payload inline, or fails with
	// inline_required_too_large.
	OutputRequireInline OutputMode = "require_inline"
)

// outputModes lists the values of output_mode parameters.
var outputModes = []any{string(OutputAuto), string(OutputRequireInline)}

// previewBytes is how much of a blob's content its preview shows.
const previewBytes = 512

// BlobRefPrefix starts every blob reference: "blake3:" and the blob's hash
// in hex.
const BlobRefPrefix = "blake3:"

// Payload is content a tool returns: inline as text or bytes, or as a
// reference to a blob in the session's store.
type Payload struct {
	InlineText  *string   `json:"inline_text,omitempty" jsonschema:"the content, when it is small UTF-8 text"`
	InlineBytes []byte    `json:"inline_bytes,omitempty" jsonschema:"the content, base64, when it is small and not UTF-8 text"`
	Blob        *BlobInfo `json:"blob,omitempty" jsonschema:"where the content is, when it is too large to return inline"`
}

// BlobInfo references content stored as a blob.
type BlobInfo struct {
	BlobRef   string `json:"blob_ref" jsonschema:"reference to the content; usable as write_file content"`
	SizeBytes int64  `json:"size_bytes"`
	Preview   string `json:"preview" jsonschema:"the start of the content, as text"`
	URI       string `json:"uri,omitempty" jsonschema:"the content as an MCP resource of this session's MCP server (resources/read)"`
}

// BlobURIPrefix starts the URI under which a session's MCP server offers a
// blob as a resource: the prefix, then the blob's hash in hex.
const BlobURIPrefix = "vfsd://blobs/"

// BlobURI returns the MCP resource URI of a blob reference.
func BlobURI(ref string) string { return BlobURIPrefix + strings.TrimPrefix(ref, BlobRefPrefix) }

// newBlobInfo describes a stored blob.
func newBlobInfo(h vfs.Hash, size int64, preview string) *BlobInfo {
	ref := BlobRefPrefix + h.String()
	return &BlobInfo{BlobRef: ref, SizeBytes: size, Preview: preview, URI: BlobURI(ref)}
}

// Blobs returns the blob store the tools read blob_ref inputs from and
// store large outputs in (nil when they have none): the session's blobs,
// as its MCP server offers them as resources.
func (t *Toolset) Blobs() vfs.BlobStore { return t.opts.Blobs }

// payload returns data inline, or as a blob when it is larger than the
// inline threshold and the mode allows.
func (t *Toolset) payload(ctx context.Context, data []byte, asText bool, mode OutputMode) (Payload, error) {
	if mode == "" {
		mode = OutputAuto
	}
	if int64(len(data)) <= t.opts.InlineBytes {
		return inline(data, asText), nil
	}
	if mode == OutputRequireInline || t.opts.Blobs == nil {
		return Payload{}, &Failure{Code: CodeInlineRequiredTooLarge,
			Msg: sizeMsg("the output", int64(len(data)), t.opts.InlineBytes) +
				" to return inline; read a smaller range (max_bytes, or start_line/line_count)",
			Details: &Details{Found: int64(len(data)), Limit: t.opts.InlineBytes}}
	}
	h, size, unpin, err := t.opts.Blobs.Put(ctx, bytes.NewReader(data), true)
	if err != nil {
		return Payload{}, err
	}
	unpin() // the store's fresh set keeps it until the next collection but one
	return Payload{Blob: newBlobInfo(h, size, preview(data))}, nil
}

func inline(data []byte, asText bool) Payload {
	if asText && utf8.Valid(data) {
		s := string(data)
		return Payload{InlineText: &s}
	}
	return Payload{InlineBytes: bytes.Clone(data)}
}

// preview is the start of data as valid UTF-8 text.
func preview(data []byte) string {
	if len(data) > previewBytes {
		data = data[:previewBytes]
		for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// text returns the payload's text for a model.
func (p Payload) text() string {
	switch {
	case p.InlineText != nil:
		return *p.InlineText
	case p.Blob != nil:
		return p.Blob.Preview + "\n[... this is a preview: the content, " + sizeWords(p.Blob.SizeBytes) + ", is in " + p.Blob.BlobRef +
			"; read it as the MCP resource " + BlobURI(p.Blob.BlobRef) + ", or read smaller windows]"
	}
	return "[" + sizeWords(int64(len(p.InlineBytes))) + " of binary content, base64 in inline_bytes]"
}

// openBlobRef parses a blob reference and opens the blob.
func (t *Toolset) openBlobRef(ctx context.Context, ref string) (vfs.Blob, error) {
	if t.opts.Blobs == nil {
		return nil, fail(CodeInvalidInput, "this workspace has no blob store; pass the content inline")
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, BlobRefPrefix))
	if err != nil || !strings.HasPrefix(ref, BlobRefPrefix) {
		return nil, fail(CodeInvalidInput, "blob_ref %q is not a blob reference (%s<64 hex digits>)", ref, BlobRefPrefix)
	}
	b, err := t.opts.Blobs.Open(ctx, h)
	if err != nil {
		return nil, fail(CodeNotFound, "blob %s does not exist (collected, or never stored); send the content inline", ref)
	}
	return b, nil
}
