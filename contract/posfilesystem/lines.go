package posfilesystem

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// binarySniffBytes is how much of a file's start is checked for NUL bytes:
// "Binary file detection: check for NUL bytes in first 8KB" (the
// document's Prior Art, after GNU grep).
const binarySniffBytes = 8 << 10

// lineBufBytes is the buffer a line read streams the file through: memory
// is this buffer plus the lines returned, whatever the file's size.
var lineBufBytes = 64 << 10

// readRequest is one read: lines [start, start+count) of a file (count 0:
// to the end, as the document's `if line_count and i >= line_count` reads;
// count < 0: none), in codec, returning at most limit bytes of it.
type readRequest struct {
	start int
	count int
	limit int64
	codec codec
	name  string // the file's name, for messages
}

// readResult is what a read returned.
type readResult struct {
	content string
	lines   int   // lines returned
	bytes   int64 // bytes of the file they take, line breaks included
	// total is the file's line count when the read reached its end, else
	// -1.
	total int
}

// errOverLimit is a read whose lines are over the size limit.
type errOverLimit struct{ at int }

func (e errOverLimit) Error() string { return fmt.Sprintf("over the limit at line %d", e.at) }

// readLines streams lines out of rd (size bytes), as the document's
// _read_file_partial does: lines before start are skipped without being
// kept, the read stops after count lines, and line breaks are Python's
// universal newlines ("\n", "\r\n" and "\r" all end a line and read as
// "\n"). It reads the file no further than the last line returned.
func readLines(rd io.ReaderAt, size int64, q readRequest) (readResult, error) {
	res := readResult{total: -1}
	var off int64
	if q.codec == codecUTF8Sig {
		var head [len(bom)]byte
		if n, _ := rd.ReadAt(head[:], 0); n == len(bom) && string(head[:]) == bom {
			off = int64(len(bom)) // utf-8-sig drops the mark the file starts with
		}
	}
	lr := &lineReader{br: bufio.NewReaderSize(io.NewSectionReader(rd, off, size-off), lineBufBytes), off: off}
	v := &validator{c: q.codec}
	var content strings.Builder
	if q.start == 1 && q.count == 0 {
		content.Grow(int(min(size-off, max(q.limit, 0)))) // a whole read: one allocation
	}
	var line []byte
	for n := 1; ; n++ {
		keep := n >= q.start
		if keep && q.count < 0 || keep && q.count > 0 && res.lines >= q.count {
			return res.done(&content), nil
		}
		line = line[:0]
		raw, term, ok, err := lr.next(func(piece []byte, at int64) error {
			if keep {
				if res.bytes+int64(len(line)+len(piece)) > q.limit {
					return errOverLimit{at: n}
				}
				line = append(line, piece...)
			}
			return v.feed(piece, at)
		})
		if err != nil {
			return res, err
		}
		if !ok {
			res.total = n - 1
			return res.done(&content), nil
		}
		if err := v.end(); err != nil {
			return res, err
		}
		if !keep {
			continue
		}
		if res.bytes+raw > q.limit {
			return res, errOverLimit{at: n}
		}
		q.codec.decodeLine(&content, line)
		if term {
			content.WriteByte('\n')
		}
		res.lines++
		res.bytes += raw
	}
}

func (r readResult) done(b *strings.Builder) readResult {
	r.content = b.String()
	return r
}

// lineReader splits a stream into lines at "\n", "\r\n" and "\r", handing
// out each line in the pieces its buffer holds, so a line of any length
// costs one buffer.
type lineReader struct {
	br  *bufio.Reader
	off int64 // file offset of the next byte
}

// next reads one line, calling sink with its pieces (line break excluded)
// and the file offset of each; the pieces are valid only during the call.
// It returns the line's length in the file (line break included), whether
// it ended in a line break, and ok=false at the end of the file when no
// line was left.
func (l *lineReader) next(sink func(piece []byte, off int64) error) (raw int64, term, ok bool, err error) {
	for {
		if _, err := l.br.Peek(1); err != nil {
			if err == io.EOF {
				return raw, false, raw > 0, nil
			}
			return raw, false, false, fmt.Errorf("read at byte %d: %w", l.off, err)
		}
		buf, _ := l.br.Peek(l.br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		piece := buf
		if i >= 0 {
			piece = buf[:i]
		}
		if len(piece) > 0 {
			if err := sink(piece, l.off); err != nil {
				return raw, false, false, err
			}
		}
		if i < 0 {
			l.discard(len(buf))
			raw += int64(len(buf))
			continue
		}
		cr := buf[i] == '\r'
		l.discard(i + 1)
		raw += int64(i + 1)
		if cr {
			if nb, _ := l.br.Peek(1); len(nb) == 1 && nb[0] == '\n' {
				l.discard(1)
				raw++
			}
		}
		return raw, true, true, nil
	}
}

func (l *lineReader) discard(n int) {
	_, _ = l.br.Discard(n) // n bytes are buffered
	l.off += int64(n)
}

// hasNUL reports whether the first binarySniffBytes of rd hold a NUL byte.
func hasNUL(rd io.ReaderAt, size int64) (bool, error) {
	buf := make([]byte, min(size, binarySniffBytes))
	if n, err := rd.ReadAt(buf, 0); n < len(buf) {
		return false, fmt.Errorf("read the start of the file: %w", err)
	}
	return bytes.IndexByte(buf, 0) >= 0, nil
}
