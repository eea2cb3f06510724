package vfs

import (
	"errors"
	"io"
	"os"
)

// Sparse files — a `truncate -s 3G`, a disk image, a core dump — hold
// mostly holes. Content moves between the store and upper files without
// allocating disk for them: readers learn where the holes are (SEEK_DATA,
// SEEK_HOLE) and hand out zeros without reading, and writers seek over runs
// of zeros instead of writing them.

// SparseReader reads a file from offset 0 to size, producing the zeros of
// its holes without reading them from the disk. On filesystems without
// SEEK_DATA it reads everything. It reads with pread and never moves the
// file's offset except through lseek(SEEK_DATA/SEEK_HOLE) probes, so f may
// be shared with other preaders but not with users of the file offset.
type SparseReader struct {
	f    *os.File
	off  int64
	size int64
	// [dataEnd, holeEnd) is the next known hole; reads before dataEnd
	// read data.
	dataEnd, holeEnd int64
	noSeek           bool
}

// NewSparseReader returns a reader of f's first size bytes.
func NewSparseReader(f *os.File, size int64) *SparseReader {
	return &SparseReader{f: f, size: size}
}

// Read reads the next bytes: data from the file, holes as zeros.
func (r *SparseReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if int64(len(p)) > r.size-r.off {
		p = p[:r.size-r.off]
	}
	if !r.noSeek && r.off >= r.dataEnd && r.off >= r.holeEnd {
		r.probe()
	}
	if !r.noSeek && r.off >= r.dataEnd && r.off < r.holeEnd {
		n := int(min(int64(len(p)), r.holeEnd-r.off))
		clear(p[:n])
		r.off += int64(n)
		return n, nil
	}
	if !r.noSeek && r.dataEnd > r.off && int64(len(p)) > r.dataEnd-r.off {
		p = p[:r.dataEnd-r.off]
	}
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && r.off < r.size {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF || (err == nil && n == 0) {
		err = nil
	}
	return n, err
}

// probe finds where the data at or after r.off ends and the hole after it.
func (r *SparseReader) probe() {
	data, err := seekData(r.f, r.off)
	switch {
	case errors.Is(err, errNoData):
		// No data from here on: the rest is a hole.
		r.dataEnd, r.holeEnd = r.off, r.size
		return
	case err != nil:
		r.noSeek = true
		return
	}
	if data > r.off {
		r.dataEnd, r.holeEnd = r.off, min(data, r.size)
		return
	}
	hole, err := seekHole(r.f, r.off)
	if err != nil {
		r.noSeek = true
		return
	}
	r.dataEnd = min(hole, r.size)
	next, err := seekData(r.f, hole)
	switch {
	case errors.Is(err, errNoData):
		r.holeEnd = r.size
	case err != nil:
		r.holeEnd = r.dataEnd
	default:
		r.holeEnd = min(next, r.size)
	}
}

// sparseChunk is the granularity at which SparseWriter looks for zeros: a
// run of zeros shorter than this is written.
const sparseChunk = 4096

// SparseWriter writes a stream to a file from offset 0, seeking over
// sparseChunk-aligned runs of zeros instead of writing them, so that they
// become holes. Finish sets the file's final size.
type SparseWriter struct {
	f   *os.File
	off int64
}

// NewSparseWriter returns a writer filling the empty file f.
func NewSparseWriter(f *os.File) *SparseWriter { return &SparseWriter{f: f} }

// Write writes p at the current offset, leaving whole zero chunks as holes.
func (w *SparseWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		// Align chunks to the file, so holes fall on block boundaries.
		n := min(sparseChunk-int(w.off%sparseChunk), len(p)-done)
		chunk := p[done : done+n]
		if n == sparseChunk && isZero(chunk) {
			w.off += int64(n)
			done += n
			continue
		}
		m, err := w.f.WriteAt(chunk, w.off)
		w.off += int64(m)
		done += m
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// Finish gives the file its full size: a trailing hole is only skipped
// over until then.
func (w *SparseWriter) Finish() error {
	fi, err := w.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < w.off {
		return w.f.Truncate(w.off)
	}
	return nil
}

// isZero reports whether b is all zeros.
func isZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
