package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/vfs"
)

// searchNative searches j.files with Go's regexp, reading through the
// session, on GOMAXPROCS workers. Paths sharing one blob are searched once.
func searchNative(ctx context.Context, j *job) ([]fileHits, error) {
	hits := make([]fileHits, len(j.files))
	units := shareBlobs(j.files, func(int) bool { return true })
	if len(units) == 0 {
		return hits, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	workers := min(runtime.GOMAXPROCS(0), len(units))
	for range workers {
		wg.Go(func() {
			var buf []byte
			for {
				u := int(next.Add(1) - 1)
				if u >= len(units) || ctx.Err() != nil {
					return
				}
				if err := searchUnit(ctx, j, units[u], hits, &buf); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return hits, nil
}

// shareBlobs groups the indices of files (those keep accepts) whose content
// is one blob, in order of first appearance: each group is searched once.
func shareBlobs(files []target, keep func(int) bool) [][]int {
	var units [][]int
	byBlob := make(map[vfs.Hash]int)
	for i, t := range files {
		if !keep(i) {
			continue
		}
		n := t.node
		if n.Upper == 0 && !n.Blob.IsZero() {
			if u, ok := byBlob[n.Blob]; ok {
				units[u] = append(units[u], i)
				continue
			}
			byBlob[n.Blob] = len(units)
		}
		units = append(units, []int{i})
	}
	return units
}

// searchUnit searches the files of one unit (paths sharing one blob):
// the content is read through the first path the session lets it read, and
// reported for every path it lets it read. The policy is per path: sharing
// a blob with a readable file must not make a refused one readable.
func searchUnit(ctx context.Context, j *job, unit []int, hits []fileHits, buf *[]byte) error {
	var (
		h      fileHits
		opened bool
	)
	for _, i := range unit {
		t := j.files[i]
		if opened {
			if _, err := j.s.Stat(ctx, t.path); err != nil {
				if skippable(err) {
					continue
				}
				return fmt.Errorf("stat %s: %w", t.path, err)
			}
			hits[i] = h
			continue
		}
		var err error
		h, opened, err = searchOne(ctx, j, t, buf)
		if err != nil {
			return err
		}
		if opened {
			hits[i] = h
		}
	}
	return nil
}

// skippable reports whether a file that cannot be opened is left out of a
// search rather than failing it: it is gone since the tree was taken, or
// the session's policy forbids reading it (a Hidden filter that agrees
// with the policy would have left it out already).
func skippable(err error) bool {
	return errors.Is(err, vfs.ErrNotFound) || errors.Is(err, vfs.ErrForbidden)
}

// searchOne reads one file through the session into *buf and searches it.
// opened is false for a file gone or forbidden; a binary one is opened but
// not searched.
func searchOne(ctx context.Context, j *job, t target, buf *[]byte) (h fileHits, opened bool, err error) {
	r, err := j.s.Open(ctx, t.path)
	if err != nil {
		if skippable(err) {
			return fileHits{}, false, nil
		}
		return fileHits{}, false, fmt.Errorf("open %s: %w", t.path, err)
	}
	defer r.Close()
	size := r.Size()
	if int64(cap(*buf)) < size {
		*buf = make([]byte, size)
	}
	data := (*buf)[:size]
	n, err := r.ReadAt(data, 0)
	if err != nil && !(err == io.EOF && int64(n) == size) {
		return fileHits{}, false, fmt.Errorf("read %s: %w", t.path, err)
	}
	data = data[:n]
	if t.node.Encoding == vfs.EncodingUnknown && bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
		return fileHits{}, true, nil
	}
	h = scan(data, j)
	h.searched = true
	return h, true, nil
}

// span is one line of a buffer: its number and where it starts and ends
// (the offset of its '\n', or the buffer's length).
type span struct{ no, start, end int }

// scan finds the lines of data that match j.m, with their context lines
// (OutputContent), their count (OutputCount) or just whether there is one
// (OutputFilesWithMatches).
func scan(data []byte, j *job) fileHits {
	var (
		h     fileHits
		spans []span
		m     = j.m
		pos   = 0 // next offset to search; always a line start
		cur   = 0 // an offset at a line start, whose number is curNo
		curNo = 1
	)
	for pos < len(data) {
		var start, end int
		if m.literal != nil {
			i := bytes.Index(data[pos:], m.literal)
			if i < 0 {
				break
			}
			i += pos
			start = bytes.LastIndexByte(data[pos:i], '\n') + 1 + pos
			end = lineEnd(data, i)
			if !m.exact && !m.re.Match(data[start:end]) {
				pos = end + 1
				continue
			}
		} else {
			loc := m.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			i := pos + loc[0]
			if i == len(data) && data[len(data)-1] == '\n' {
				break // the empty "line" after the final line break
			}
			start = bytes.LastIndexByte(data[pos:i], '\n') + 1 + pos
			end = lineEnd(data, i)
		}
		h.count++
		if j.mode == OutputFilesWithMatches {
			return h
		}
		if j.mode == OutputContent {
			curNo += bytes.Count(data[cur:start], []byte{'\n'})
			cur = start
			spans = append(spans, span{no: curNo, start: start, end: end})
			if j.maxMatches > 0 && len(spans) == j.maxMatches {
				break // no more can be reported
			}
		}
		pos = end + 1
	}
	if len(spans) > 0 {
		h.lines = withContext(data, spans, j)
	}
	return h
}

// lineEnd returns the offset of the '\n' ending the line holding offset i,
// or len(data).
func lineEnd(data []byte, i int) int {
	if e := bytes.IndexByte(data[i:], '\n'); e >= 0 {
		return i + e
	}
	return len(data)
}

// withContext reports the matching lines with up to j.before and j.after
// context lines around each: windows that overlap or touch merge, and a
// matching line is never a context line.
func withContext(data []byte, spans []span, j *job) []hitLine {
	lines := make([]hitLine, 0, len(spans)*(1+j.before+j.after))
	emit := func(no, start, end int, context bool) {
		lines = append(lines, hitLine{no: no, text: cleanLine(data[start:end], j.maxLine), context: context})
	}
	last := 0 // number of the last line reported
	var before []span
	for k, sp := range spans {
		if n := min(j.before, sp.no-1-last); n > 0 {
			before = before[:0]
			start := sp.start
			for no := sp.no - 1; no >= sp.no-n; no-- {
				end := start - 1
				start = bytes.LastIndexByte(data[:end], '\n') + 1
				before = append(before, span{no: no, start: start, end: end})
			}
			for i := len(before) - 1; i >= 0; i-- {
				emit(before[i].no, before[i].start, before[i].end, true)
			}
		}
		emit(sp.no, sp.start, sp.end, false)
		last = sp.no
		if j.after == 0 {
			continue
		}
		limit := sp.no + j.after
		if k+1 < len(spans) {
			limit = min(limit, spans[k+1].no-1)
		}
		for pos, no := sp.end+1, sp.no+1; no <= limit && pos < len(data); no++ {
			end := lineEnd(data, pos)
			emit(no, pos, end, true)
			last = no
			pos = end + 1
		}
	}
	return lines
}
