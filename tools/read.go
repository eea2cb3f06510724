package tools

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// ReadFileParams are read_file's parameters.
type ReadFileParams struct {
	Path        string     `json:"path" jsonschema:"file to read, relative to the workspace root"`
	OffsetBytes *int64     `json:"offset_bytes,omitempty" jsonschema:"byte offset to start reading at (byte-range mode)"`
	MaxBytes    *int64     `json:"max_bytes,omitempty" jsonschema:"at most this many bytes (byte-range mode)"`
	StartLine   *int       `json:"start_line,omitempty" jsonschema:"1-based line to start at (line mode)"`
	LineCount   *int       `json:"line_count,omitempty" jsonschema:"number of lines to return (line mode)"`
	Offset      *int       `json:"offset,omitempty" jsonschema:"alias of start_line"`
	Limit       *int       `json:"limit,omitempty" jsonschema:"alias of line_count"`
	Encoding    string     `json:"encoding,omitempty" jsonschema:"utf8 (default): text when the file is text; bytes: always base64 bytes"`
	LineNumbers bool       `json:"line_numbers,omitempty" jsonschema:"prefix each line of the text view with its number, like cat -n"`
	OutputMode  OutputMode `json:"output_mode,omitempty" jsonschema:"auto (default): large content comes back as a blob; require_inline: inline or fail"`
}

// ReadFileReceipt is read_file's receipt.
type ReadFileReceipt struct {
	Receipt
	Path string `json:"path"`
	Payload
	Encoding    string `json:"encoding" jsonschema:"utf-8 or binary"`
	SizeBytes   int64  `json:"size_bytes" jsonschema:"size of the whole file"`
	Version     uint64 `json:"version" jsonschema:"the file's version; pass it as write_file's expected_version"`
	OffsetBytes int64  `json:"offset_bytes" jsonschema:"byte offset of the returned content"`
	StartLine   int    `json:"start_line,omitempty" jsonschema:"1-based first line returned (text files)"`
	EndLine     int    `json:"end_line,omitempty" jsonschema:"last line returned (text files)"`
	TotalLines  int    `json:"total_lines,omitempty" jsonschema:"lines in the whole file (text files)"`
	Truncated   bool   `json:"truncated" jsonschema:"more of the file exists beyond what was returned"`
	view        string
}

func (r *ReadFileReceipt) text() string { return r.view }

func init() {
	register("read_file", "Read a file of the workspace: all of it, a 1-based line range (start_line, line_count) or a byte range (offset_bytes, max_bytes). Reports size, total lines, version and whether the result was truncated; binary files come back as base64 bytes.",
		false, map[string][]any{"encoding": {"utf8", "bytes"}, "output_mode": outputModes}, readFile)
}

func readFile(ctx context.Context, t *Toolset, p *ReadFileParams) (*ReadFileReceipt, error) {
	if err := p.normalize(); err != nil {
		return nil, err
	}
	path, err := t.path("path", p.Path, vfs.AccessRead, followLast)
	if err != nil {
		return nil, err
	}
	n, err := t.s.Stat(ctx, path)
	if err != nil {
		return nil, err
	}
	if n.IsDir() {
		return nil, fail(CodeIsDirectory, "%s is a directory; use list_directory to see its entries", displayPath(path))
	}
	r := &ReadFileReceipt{Path: displayPath(path), SizeBytes: n.Size, Version: n.Version}
	maxRead := policy.Clamp(0, t.pol.Caps.MaxReadBytes)
	if p.OffsetBytes != nil || p.MaxBytes != nil {
		return r, t.readBytes(ctx, r, path, n, p, maxRead)
	}
	return r, t.readLines(ctx, r, path, n, p, maxRead)
}

// normalize folds the aliases and checks the ranges.
func (p *ReadFileParams) normalize() error {
	if p.Offset != nil {
		if p.StartLine != nil {
			return fail(CodeInvalidInput, "pass start_line or its alias offset, not both")
		}
		p.StartLine = p.Offset
	}
	if p.Limit != nil {
		if p.LineCount != nil {
			return fail(CodeInvalidInput, "pass line_count or its alias limit, not both")
		}
		p.LineCount = p.Limit
	}
	lineMode := p.StartLine != nil || p.LineCount != nil
	byteMode := p.OffsetBytes != nil || p.MaxBytes != nil
	switch {
	case lineMode && byteMode:
		return fail(CodeInvalidInput, "use either a line range (start_line, line_count) or a byte range (offset_bytes, max_bytes), not both")
	case p.StartLine != nil && *p.StartLine < 1:
		return fail(CodeInvalidInput, "start_line is 1-based and must be at least 1, not %d", *p.StartLine)
	case p.LineCount != nil && *p.LineCount < 1:
		return fail(CodeInvalidInput, "line_count must be at least 1, not %d", *p.LineCount)
	case p.OffsetBytes != nil && *p.OffsetBytes < 0:
		return fail(CodeInvalidInput, "offset_bytes must not be negative")
	case p.MaxBytes != nil && *p.MaxBytes < 1:
		return fail(CodeInvalidInput, "max_bytes must be at least 1")
	}
	switch p.Encoding {
	case "", "utf8", "utf-8", "bytes":
	default:
		return fail(CodeInvalidInput, "encoding must be utf8 or bytes, not %q", p.Encoding)
	}
	return checkOutputMode(p.OutputMode)
}

func checkOutputMode(m OutputMode) error {
	switch m {
	case "", OutputAuto, OutputRequireInline:
		return nil
	}
	return fail(CodeInvalidInput, "output_mode must be auto or require_inline, not %q", m)
}

// readBytes serves a byte range.
func (t *Toolset) readBytes(ctx context.Context, r *ReadFileReceipt, path vfs.Path, n vfs.Node, p *ReadFileParams, maxRead int64) error {
	off := int64(0)
	if p.OffsetBytes != nil {
		off = min(*p.OffsetBytes, n.Size)
	}
	want := n.Size - off
	if p.MaxBytes != nil {
		want = min(want, *p.MaxBytes)
	}
	if maxRead > 0 {
		want = min(want, maxRead)
	}
	buf := make([]byte, want)
	got, err := t.s.ReadAt(ctx, path, buf, off)
	if err != nil && got < len(buf) {
		return err
	}
	buf = buf[:got]
	r.OffsetBytes, r.Truncated = off, off+int64(got) < n.Size
	return t.finishRead(ctx, r, n, buf, p, buf)
}

// readLines serves the whole file or a line range.
func (t *Toolset) readLines(ctx context.Context, r *ReadFileReceipt, path vfs.Path, n vfs.Node, p *ReadFileParams, maxRead int64) error {
	if maxRead > 0 && n.Size > maxRead && p.StartLine == nil && p.LineCount == nil {
		// Past the cap a plain read becomes a byte range of the cap.
		p.MaxBytes = &maxRead
		return t.readBytes(ctx, r, path, n, p, maxRead)
	}
	data, _, err := t.s.ReadFile(ctx, path)
	if err != nil {
		return err
	}
	if isBinary(n, data) || p.Encoding == "bytes" {
		if p.StartLine != nil || p.LineCount != nil {
			if isBinary(n, data) {
				return fail(CodeInvalidInput, "%s is binary and has no lines; read it by byte range (offset_bytes, max_bytes)", r.Path)
			}
		}
		r.Truncated = false
		return t.finishRead(ctx, r, n, data, p, data)
	}
	lines := splitLines(data)
	r.TotalLines = len(lines)
	start, count := 1, len(lines)
	if p.StartLine != nil {
		start = *p.StartLine
	}
	if p.LineCount != nil {
		count = *p.LineCount
	}
	if start > len(lines) && !(start == 1 && len(lines) == 0) {
		return fail(CodeInvalidInput, "start_line %d is past the end of %s, which has %d lines", start, r.Path, len(lines))
	}
	end := min(start-1+count, len(lines))
	sel := []byte(strings.Join(lines[start-1:end], ""))
	if maxRead > 0 && int64(len(sel)) > maxRead {
		sel = sel[:maxRead]
		end = start - 1 + len(splitLines(sel))
	}
	r.StartLine, r.EndLine = start, end
	if len(lines) == 0 {
		r.StartLine, r.EndLine = 0, 0
	}
	r.OffsetBytes = int64(len(strings.Join(lines[:start-1], "")))
	r.Truncated = r.OffsetBytes+int64(len(sel)) < n.Size
	return t.finishRead(ctx, r, n, sel, p, data)
}

// finishRead fills the payload and the text view.
func (t *Toolset) finishRead(ctx context.Context, r *ReadFileReceipt, n vfs.Node, sel []byte, p *ReadFileParams, whole []byte) error {
	binary := isBinary(n, whole)
	r.Encoding = "utf-8"
	if binary {
		r.Encoding = "binary"
	}
	asText := !binary && p.Encoding != "bytes"
	pl, err := t.payload(ctx, sel, asText, p.OutputMode)
	if err != nil {
		return err
	}
	r.Payload = pl
	word := "Read"
	if r.Truncated {
		word = "Read part of"
	}
	switch {
	case r.TotalLines > 0:
		r.SummaryText = fmt.Sprintf("%s %s: lines %d-%d of %d", word, r.Path, r.StartLine, r.EndLine, r.TotalLines)
	default:
		r.SummaryText = fmt.Sprintf("%s %s: %s at offset %d of %s", word, r.Path, sizeWords(int64(len(sel))), r.OffsetBytes, sizeWords(n.Size))
	}
	r.view = pl.text()
	if asText && p.LineNumbers && pl.InlineText != nil {
		r.view = numbered(*pl.InlineText, max(r.StartLine, 1))
	}
	if n.Size == 0 {
		r.view = "[" + r.Path + " is empty]"
	}
	if r.Truncated && pl.Blob == nil {
		// Models often see only the text: say there is more, and how to get it.
		if !strings.HasSuffix(r.view, "\n") {
			r.view += "\n"
		}
		if r.TotalLines > 0 {
			r.view += fmt.Sprintf("[... showing lines %d-%d of %d; read on with start_line=%d]\n", r.StartLine, r.EndLine, r.TotalLines, r.EndLine+1)
		} else {
			r.view += fmt.Sprintf("[... showing bytes %d-%d of %d; read on with offset_bytes=%d]\n", r.OffsetBytes, r.OffsetBytes+int64(len(sel)), n.Size, r.OffsetBytes+int64(len(sel)))
		}
	}
	return nil
}

// isBinary reports whether content is binary: by the node's encoding hint,
// or by a NUL byte or invalid UTF-8 in it.
func isBinary(n vfs.Node, data []byte) bool {
	switch n.Encoding {
	case vfs.EncodingBinary:
		return true
	case vfs.EncodingUTF8:
		return false
	}
	return vfs.DetectEncoding(data) == vfs.EncodingBinary
}

// splitLines splits after each '\n', keeping it; a last line without one is
// a line too.
func splitLines(data []byte) []string {
	var lines []string
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, string(data))
			break
		}
		lines = append(lines, string(data[:i+1]))
		data = data[i+1:]
	}
	return lines
}

// numbered renders text like cat -n, numbering from first.
func numbered(text string, first int) string {
	var b strings.Builder
	for i, l := range splitLines([]byte(text)) {
		fmt.Fprintf(&b, "%6d\t%s", first+i, l)
	}
	return b.String()
}
