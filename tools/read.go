package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

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
	// NextStartLine and NextOffsetBytes say how to read on after a
	// truncated result: pass the one that is set as start_line or
	// offset_bytes.
	NextStartLine   int   `json:"next_start_line,omitempty" jsonschema:"when truncated: the start_line that reads on"`
	NextOffsetBytes int64 `json:"next_offset_bytes,omitempty" jsonschema:"when truncated within a line or a byte range: the offset_bytes that reads on"`
	view            string
}

// DefaultReadLines is how many lines read_file returns when it is not given
// line_count, as the agents' own file readers do; a page also stops at the
// inline limit (64 KiB by default), at a line's end.
const DefaultReadLines = 2000

func (r *ReadFileReceipt) text() string { return r.view }

func init() {
	register("read_file", "Read a file of the workspace, a page at a time: up to 2000 lines (or 64 KiB) from start_line (default 1); line_count sets another page size. When truncated is true, read on from next_start_line. A byte range (offset_bytes, max_bytes) reads raw bytes; binary files come back as base64 bytes. Reports size, total lines and version.",
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
		return nil, fail(CodeIsDirectory, "%s is a directory; use list_directory to see its entries", path.Rel())
	}
	rd, err := t.s.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	n.Size = rd.Size()
	r := &ReadFileReceipt{Path: path.Rel(), SizeBytes: n.Size, Version: n.Version}
	// Every read is a window of the file, and memory is bounded by the
	// window's inline part: larger windows stream into a blob.
	maxRead := policy.Clamp(MaxReadWindow, t.pol.Caps.MaxReadBytes)
	if p.OffsetBytes != nil || p.MaxBytes != nil {
		return r, t.readBytes(ctx, r, rd, n, p, maxRead)
	}
	return r, t.readLines(ctx, r, rd, n, p, maxRead)
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
func (t *Toolset) readBytes(ctx context.Context, r *ReadFileReceipt, rd io.ReaderAt, n vfs.Node, p *ReadFileParams, maxRead int64) error {
	off := int64(0)
	if p.OffsetBytes != nil {
		off = min(*p.OffsetBytes, n.Size)
	}
	want := min(n.Size-off, maxRead)
	if p.MaxBytes != nil {
		want = min(want, *p.MaxBytes)
	}
	r.OffsetBytes, r.Truncated = off, off+want < n.Size
	if r.Truncated {
		r.NextOffsetBytes = off + want
	}
	return t.sendWindow(ctx, r, rd, n, off, want, nil, p)
}

// lineScanChunk is how much of a file a line scan reads at a time; tests
// lower it to cross chunk boundaries.
var lineScanChunk = 64 << 10

// lineWindow is where a line-mode read's lines are, found by scanning.
type lineWindow struct {
	startOff, endOff int64 // the window's bytes
	endLine          int   // its last line
	totalLines       int   // lines in the file; -1 when not counted (too large)
	binary           bool  // the scanned content is not UTF-8 text
}

// scanLines finds the bytes of lines [start, start+count) of rd (count
// < 0: to the end), at most maxRead of them, and counts the file's lines,
// reading it in chunks: memory is one chunk, whatever the file's size. It
// reads at most MaxLineScanBytes; past that the lines are not counted,
// and a window that starts beyond it is refused.
func scanLines(rd io.ReaderAt, size int64, start, count int, maxRead int64, enc vfs.Encoding) (lineWindow, error) {
	w := lineWindow{startOff: -1, endOff: -1, totalLines: -1}
	limit := min(size, MaxLineScanBytes)
	var sniff vfs.Sniffer
	line := 1 // the line at off
	buf := make([]byte, lineScanChunk)
	for off := int64(0); off < limit; {
		chunk := buf[:min(int64(len(buf)), limit-off)]
		got, err := rd.ReadAt(chunk, off)
		if got < len(chunk) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return w, err
		}
		if enc == vfs.EncodingUnknown {
			sniff.Write(chunk)
		}
		for i := 0; i < len(chunk); {
			if line == start && w.startOff < 0 {
				w.startOff = off + int64(i)
			}
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			if w.startOff >= 0 && w.endOff < 0 && (count >= 0 && line == start+count-1) {
				w.endOff, w.endLine = off+int64(i), line
			}
			line++
		}
		off += int64(len(chunk))
	}
	if w.startOff < 0 && line == start && limit == size {
		w.startOff = size // the (empty) end of the file
	}
	// A rune cut by the scan's limit is not evidence of binary content.
	w.binary = sniff.Binary() || (limit == size && sniff.Incomplete())
	if limit == size {
		w.totalLines = line - 1
		if size > 0 && !endsWithNewline(rd, size) {
			w.totalLines++
		}
	}
	if w.startOff < 0 {
		if limit < size {
			return w, &Failure{Code: CodeTooLarge,
				Msg:     fmt.Sprintf("line %d is beyond the first %s of the file, as far as a line read scans; read it by byte range (offset_bytes, max_bytes)", start, sizeWords(MaxLineScanBytes)),
				Details: &Details{Found: size, Limit: MaxLineScanBytes}}
		}
		return w, nil
	}
	if w.endOff < 0 {
		w.endOff, w.endLine = limit, w.lastLine(line, limit, size)
	}
	if w.endOff-w.startOff > maxRead {
		w.endOff = w.startOff + maxRead
		w.endLine = -1 // recounted by the caller over the window
	}
	return w, nil
}

// lastLine is the last line a window running to the scan's end holds.
func (w lineWindow) lastLine(line int, limit, size int64) int {
	if limit == size && w.totalLines >= 0 {
		return w.totalLines
	}
	return line
}

func endsWithNewline(rd io.ReaderAt, size int64) bool {
	var b [1]byte
	_, err := rd.ReadAt(b[:], size-1)
	return err == nil && b[0] == '\n'
}

// readLines serves a page of lines: line_count lines (default
// DefaultReadLines) from start_line (default 1), and never more than the
// inline limit: a page that would be larger ends at the last line that
// fits, or, when one line alone is larger, within that line. The window
// is found by scanning the file, then served like a byte range. A read
// without a range of a binary file (or with encoding bytes) is a page of
// bytes instead.
func (t *Toolset) readLines(ctx context.Context, r *ReadFileReceipt, rd io.ReaderAt, n vfs.Node, p *ReadFileParams, maxRead int64) error {
	ranged := p.StartLine != nil || p.LineCount != nil
	page := min(maxRead, t.opts.InlineBytes)
	if !ranged && (p.Encoding == "bytes" || n.Encoding == vfs.EncodingBinary) {
		p.MaxBytes = &page
		return t.readBytes(ctx, r, rd, n, p, maxRead)
	}
	start, count := 1, DefaultReadLines
	if p.StartLine != nil {
		start = *p.StartLine
	}
	if p.LineCount != nil {
		count = *p.LineCount
	}
	w, err := scanLines(rd, n.Size, start, count, page, n.Encoding)
	if err != nil {
		return err
	}
	binary := isBinary(n, nil) || w.binary
	if binary {
		if ranged {
			return fail(CodeInvalidInput, "%s is binary and has no lines; read it by byte range (offset_bytes, max_bytes)", r.Path)
		}
		p.MaxBytes = &page
		return t.readBytes(ctx, r, rd, n, p, maxRead)
	}
	if w.startOff < 0 || (w.startOff == n.Size && !(start == 1 && n.Size == 0)) {
		return fail(CodeInvalidInput, "start_line %d is past the end of %s, which has %d lines", start, r.Path, max(w.totalLines, 0))
	}
	partial := false // the page ends within a line
	if w.endLine < 0 {
		if partial, err = w.endAtLine(rd, start); err != nil {
			return fmt.Errorf("read %s: %w", r.Path, err)
		}
	}
	r.TotalLines = max(w.totalLines, 0)
	r.StartLine, r.EndLine = start, w.endLine
	if n.Size == 0 {
		r.StartLine, r.EndLine = 0, 0
	}
	r.OffsetBytes = w.startOff
	r.Truncated = w.endOff < n.Size
	switch {
	case !r.Truncated:
	case partial:
		r.NextOffsetBytes = w.endOff
	default:
		r.NextStartLine = r.EndLine + 1
	}
	return t.sendWindow(ctx, r, rd, n, w.startOff, w.endOff-w.startOff, &binary, p)
}

// endAtLine ends a window that the byte cap cut (endLine < 0) at the end of
// its last whole line, and counts its lines. When the window holds no line
// end (one line is longer than the cap), it ends at a character boundary
// within that line, and partial is true. The window is at most the inline
// limit, so it is read into memory.
func (w *lineWindow) endAtLine(rd io.ReaderAt, start int) (partial bool, err error) {
	buf := make([]byte, w.endOff-w.startOff)
	if got, err := rd.ReadAt(buf, w.startOff); got < len(buf) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		w.endOff = w.startOff + int64(i+1)
		w.endLine = start - 1 + bytes.Count(buf[:i+1], []byte{'\n'})
		return false, nil
	}
	k := len(buf)
	for back := 0; back < utf8.UTFMax && k > 0 && !utf8.Valid(buf[:k]); back++ {
		k--
	}
	if k == 0 || !utf8.Valid(buf[:k]) {
		k = len(buf) // not text after all: cut where the cap is
	}
	w.endOff, w.endLine = w.startOff+int64(k), start
	return true, nil
}

// sendWindow returns bytes [off, off+size) of rd as the receipt's payload:
// read into memory when they fit inline, streamed into a blob otherwise,
// so a read's memory is bounded by the inline limit whatever its window.
// binary is the content's class when known; nil classifies the window.
func (t *Toolset) sendWindow(ctx context.Context, r *ReadFileReceipt, rd io.ReaderAt, n vfs.Node, off, size int64, binary *bool, p *ReadFileParams) error {
	mode := p.OutputMode
	if mode == "" {
		mode = OutputAuto
	}
	var pl Payload
	isBin := false
	if size <= t.opts.InlineBytes {
		buf := make([]byte, size)
		if got, err := rd.ReadAt(buf, off); got < len(buf) {
			return fmt.Errorf("read %s at %d: %w", r.Path, off, err)
		}
		isBin = isBinary(n, buf)
		if binary != nil {
			isBin = *binary
		}
		pl = inline(buf, !isBin && p.Encoding != "bytes")
		if r.EndLine < 0 {
			r.EndLine = r.StartLine - 1 + len(splitLines(buf))
		}
	} else {
		if mode == OutputRequireInline || t.opts.Blobs == nil {
			return &Failure{Code: CodeInlineRequiredTooLarge,
				Msg: sizeMsg("the output", size, t.opts.InlineBytes) +
					" to return inline; read a smaller range (max_bytes, or start_line/line_count)",
				Details: &Details{Found: size, Limit: t.opts.InlineBytes}}
		}
		head := &headWriter{max: previewBytes}
		lines := new(lineCounter)
		sniff := vfs.NewSniffer(io.TeeReader(io.NewSectionReader(rd, off, size), io.MultiWriter(head, lines)))
		h, got, unpin, err := t.opts.Blobs.Put(ctx, sniff, true)
		if err != nil {
			return fmt.Errorf("store %s's content: %w", r.Path, err)
		}
		unpin() // the store's fresh set keeps it until the next collection but one
		isBin = isBinary(n, nil) || sniff.Encoding() == vfs.EncodingBinary
		if binary != nil {
			isBin = *binary
		}
		pl = Payload{Blob: newBlobInfo(h, got, preview(head.buf))}
		if r.EndLine < 0 {
			r.EndLine = r.StartLine - 1 + lines.lines()
		}
	}
	r.Encoding = "utf-8"
	if isBin {
		r.Encoding = "binary"
	}
	finishRead(r, n, pl, size, !isBin && p.Encoding != "bytes", p)
	return nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	buf []byte
	max int
}

func (w *headWriter) Write(b []byte) (int, error) {
	if k := min(len(b), w.max-len(w.buf)); k > 0 {
		w.buf = append(w.buf, b[:k]...)
	}
	return len(b), nil
}

// lineCounter counts the line breaks written to it.
type lineCounter struct {
	n    int
	last byte
	any  bool
}

func (c *lineCounter) Write(b []byte) (int, error) {
	c.n += bytes.Count(b, []byte{'\n'})
	if len(b) > 0 {
		c.last, c.any = b[len(b)-1], true
	}
	return len(b), nil
}

// lines is the number of lines the written content holds.
func (c *lineCounter) lines() int {
	if c.any && c.last != '\n' {
		return c.n + 1
	}
	return c.n
}

// finishRead fills the payload and the text view.
func finishRead(r *ReadFileReceipt, n vfs.Node, pl Payload, selLen int64, asText bool, p *ReadFileParams) {
	r.Payload = pl
	word := "Read"
	if r.Truncated {
		word = "Read part of"
	}
	switch {
	case r.TotalLines > 0:
		r.SummaryText = fmt.Sprintf("%s %s: lines %d-%d of %d", word, r.Path, r.StartLine, r.EndLine, r.TotalLines)
	case r.StartLine > 0:
		r.SummaryText = fmt.Sprintf("%s %s: lines %d-%d of a file too large to count lines in (%s)", word, r.Path, r.StartLine, r.EndLine, sizeWords(n.Size))
	default:
		r.SummaryText = fmt.Sprintf("%s %s: %s at offset %d of %s", word, r.Path, sizeWords(selLen), r.OffsetBytes, sizeWords(n.Size))
	}
	r.view = pl.text()
	if asText && p.LineNumbers && pl.InlineText != nil {
		r.view = numbered(*pl.InlineText, max(r.StartLine, 1))
	}
	if n.Size == 0 {
		r.view = "[" + r.Path + " is empty]"
	}
	if r.Truncated {
		// Models often see only the text: say there is more, and how to get it.
		if !strings.HasSuffix(r.view, "\n") {
			r.view += "\n"
		}
		r.view += continuation(r, n, selLen) + "\n"
	}
}

// continuation is the line that tells a model how to read on after a
// truncated read.
func continuation(r *ReadFileReceipt, n vfs.Node, selLen int64) string {
	of := ""
	if r.TotalLines > 0 {
		of = fmt.Sprintf(" of %d", r.TotalLines)
	}
	switch {
	case r.NextStartLine > 0:
		return fmt.Sprintf("[... showing lines %d-%d%s; read on with start_line=%d]", r.StartLine, r.EndLine, of, r.NextStartLine)
	case r.StartLine > 0:
		return fmt.Sprintf("[... line %d is longer than one result; showing its first %s; read on within it with offset_bytes=%d and max_bytes=%d, or skip to the next line with start_line=%d]",
			r.StartLine, sizeWords(selLen), r.NextOffsetBytes, selLen, r.StartLine+1)
	}
	return fmt.Sprintf("[... showing bytes %d-%d of %d; read on with offset_bytes=%d and max_bytes=%d]", r.OffsetBytes, r.OffsetBytes+selLen, n.Size, r.OffsetBytes+selLen, selLen)
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
