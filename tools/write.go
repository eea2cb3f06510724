package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/vfsd/vfsd/vfs"
)

// WriteFileParams are write_file's parameters. Exactly one content source
// is given: inline_text (or its alias content), inline_bytes or blob_ref.
type WriteFileParams struct {
	Path            string  `json:"path" jsonschema:"file to write, relative to the workspace root"`
	InlineText      *string `json:"inline_text,omitempty" jsonschema:"the new content, as text"`
	Content         *string `json:"content,omitempty" jsonschema:"alias of inline_text"`
	InlineBytes     []byte  `json:"inline_bytes,omitempty" jsonschema:"the new content, base64-encoded bytes"`
	BlobRef         string  `json:"blob_ref,omitempty" jsonschema:"the new content, as a blob reference another tool returned"`
	Mode            string  `json:"mode,omitempty" jsonschema:"create (default: new file or replace), overwrite (file must exist), create_new (file must not exist), append"`
	CreateParents   *bool   `json:"create_parents,omitempty" jsonschema:"create missing parent directories (default true)"`
	ExpectedVersion *uint64 `json:"expected_version,omitempty" jsonschema:"fail with conflict unless the file is at this version (0: unless it does not exist)"`
	Encoding        string  `json:"encoding,omitempty" jsonschema:"the content's encoding, kept with the file: utf-8 (text, read back as text, NUL bytes included) or binary (read back as base64 bytes); default: detected from the content"`
}

// writeEncodings are write_file's encoding values.
var writeEncodings = map[string]vfs.Encoding{"": vfs.EncodingUnknown, "utf-8": vfs.EncodingUTF8, "utf8": vfs.EncodingUTF8, "binary": vfs.EncodingBinary}

// WriteFileReceipt is write_file's receipt.
type WriteFileReceipt struct {
	Receipt
	Path         string `json:"path"`
	WrittenBytes int64  `json:"written_bytes" jsonschema:"bytes written (the appended bytes, for append)"`
	SizeBytes    int64  `json:"size_bytes" jsonschema:"the file's size afterwards"`
	Created      bool   `json:"created" jsonschema:"the write created the file"`
	Version      uint64 `json:"version" jsonschema:"the file's new version"`
}

func (r *WriteFileReceipt) text() string { return r.SummaryText }

var writeModes = map[string]vfs.WriteMode{
	"":           vfs.WriteCreate,
	"create":     vfs.WriteCreate,
	"overwrite":  vfs.WriteOverwrite,
	"create_new": vfs.WriteCreateNew,
	"append":     vfs.WriteAppend,
}

func init() {
	register("write_file", "Write a whole file: create it or replace its content (mode create), only replace (overwrite), only create (create_new) or append. Content is inline_text, inline_bytes (base64) or a blob_ref. Prefer edit_file or apply_patch for changes to existing files.",
		true, map[string][]any{"mode": {"create", "overwrite", "create_new", "append"}, "encoding": {"utf-8", "binary"}}, writeFile)
}

func writeFile(ctx context.Context, t *Toolset, p *WriteFileParams) (*WriteFileReceipt, error) {
	mode, ok := writeModes[p.Mode]
	if !ok {
		return nil, fail(CodeInvalidInput, "mode must be create, overwrite, create_new or append, not %q", p.Mode)
	}
	enc, ok := writeEncodings[p.Encoding]
	if !ok {
		return nil, fail(CodeInvalidInput, "encoding must be utf-8 or binary, not %q (or leave it out to detect it from the content)", p.Encoding)
	}
	content, size, err := t.writeContent(ctx, p)
	if err != nil {
		return nil, err
	}
	if c, ok := content.(io.Closer); ok {
		defer c.Close()
	}
	path, err := t.path("path", p.Path, vfs.AccessWrite, followLast)
	if err != nil {
		return nil, err
	}
	if path.IsRoot() {
		return nil, fail(CodeIsDirectory, "the workspace root is a directory; name a file to write")
	}
	if err := t.checkSessionBytes(size); err != nil {
		return nil, err
	}
	parents := p.CreateParents == nil || *p.CreateParents
	res, err := t.s.WriteFile(ctx, path, content, vfs.WriteOptions{Mode: mode, CreateParents: parents, ExpectedVersion: p.ExpectedVersion, Encoding: enc})
	if err != nil {
		return nil, err
	}
	r := &WriteFileReceipt{Path: path.Rel(), WrittenBytes: res.Written, SizeBytes: res.Node.Size,
		Created: res.Created, Version: res.Node.Version}
	verb := "Wrote"
	switch {
	case mode == vfs.WriteAppend:
		verb = "Appended"
	case res.Created:
		verb = "Created"
	}
	r.SummaryText = fmt.Sprintf("%s %s (%s, version %d)", verb, r.Path, sizeWords(res.Written), res.Node.Version)
	return r, nil
}

// writeContent picks the one content source and checks it against the
// write caps.
func (t *Toolset) writeContent(ctx context.Context, p *WriteFileParams) (io.Reader, int64, error) {
	if p.Content != nil {
		if p.InlineText != nil {
			return nil, 0, fail(CodeInvalidInput, "pass inline_text or its alias content, not both")
		}
		p.InlineText = p.Content
	}
	n := 0
	for _, given := range []bool{p.InlineText != nil, p.InlineBytes != nil, p.BlobRef != ""} {
		if given {
			n++
		}
	}
	if n != 1 {
		return nil, 0, fail(CodeInvalidInput, "give the content exactly once: inline_text, inline_bytes or blob_ref (got %d)", n)
	}
	caps := t.pol.Caps
	switch {
	case p.InlineText != nil:
		s := *p.InlineText
		if caps.MaxWriteChars > 0 {
			if c := utf8.RuneCountInString(s); int64(c) > caps.MaxWriteChars {
				return nil, 0, &Failure{Code: CodeTooLarge,
					Msg:     fmt.Sprintf("the content is %d characters, over this policy's limit of %d per write; write it in parts with mode append", c, caps.MaxWriteChars),
					Details: &Details{Found: int64(c), Limit: caps.MaxWriteChars}}
			}
		}
		return t.capWrite(bytes.NewReader([]byte(s)), int64(len(s)))
	case p.InlineBytes != nil:
		return t.capWrite(bytes.NewReader(p.InlineBytes), int64(len(p.InlineBytes)))
	}
	b, err := t.openBlobRef(ctx, p.BlobRef)
	if err != nil {
		return nil, 0, err
	}
	r, size, err := t.capWrite(io.NewSectionReader(b, 0, b.Size()), b.Size())
	if err != nil {
		b.Close()
		return nil, 0, err
	}
	return struct {
		io.Reader
		io.Closer
	}{r, b}, size, nil
}

func (t *Toolset) capWrite(r io.Reader, size int64) (io.Reader, int64, error) {
	if limit := t.pol.Caps.MaxWriteBytes; limit > 0 && size > limit {
		return nil, 0, &Failure{Code: CodeTooLarge, Msg: sizeMsg("the content", size, limit) + " per write; write it in parts with mode append",
			Details: &Details{Found: size, Limit: limit}}
	}
	return r, size, nil
}

// checkSessionBytes refuses a write of n more bytes that would take the
// session past its byte cap.
func (t *Toolset) checkSessionBytes(n int64) error {
	limit := t.pol.Caps.MaxSessionBytes
	if limit <= 0 {
		return nil
	}
	if total := t.s.Info().Bytes + n; total > limit {
		return &Failure{Code: CodeTooLarge, Msg: fmt.Sprintf("the workspace would hold %d bytes, over its limit of %d; delete files you no longer need", total, limit),
			Details: &Details{Found: total, Limit: limit}}
	}
	return nil
}
