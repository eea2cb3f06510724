package vfs

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// DetectEncoding classifies content: UTF-8 text without NUL bytes is
// EncodingUTF8, anything else EncodingBinary.
func DetectEncoding(data []byte) Encoding {
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return EncodingBinary
	}
	return EncodingUTF8
}

// Sniffer passes content through unchanged while classifying it as
// DetectEncoding would, without holding more than one rune of it.
type Sniffer struct {
	r       io.Reader
	binary  bool
	partial []byte // an incomplete rune at the end of what was read so far
}

// NewSniffer returns a reader of r that classifies what passes through it.
func NewSniffer(r io.Reader) *Sniffer { return &Sniffer{r: r} }

// Read implements io.Reader.
func (s *Sniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && !s.binary {
		s.scan(p[:n])
	}
	return n, err
}

func (s *Sniffer) scan(b []byte) {
	if bytes.IndexByte(b, 0) >= 0 {
		s.binary = true
		return
	}
	if len(s.partial) > 0 {
		// Complete the rune the last chunk ended in.
		for len(b) > 0 && !utf8.FullRune(s.partial) {
			s.partial = append(s.partial, b[0])
			b = b[1:]
		}
		if !utf8.FullRune(s.partial) {
			return
		}
		if r, size := utf8.DecodeRune(s.partial); (r == utf8.RuneError && size <= 1) || size != len(s.partial) {
			s.binary = true
			return
		}
		s.partial = s.partial[:0]
	}
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(b[:cut]) {
		s.binary = true
		return
	}
	s.partial = append(s.partial, b[cut:]...)
}

// Write classifies p as the next part of the content, for callers that
// read the content themselves; a zero Sniffer is ready for it. It never
// fails.
func (s *Sniffer) Write(p []byte) (int, error) {
	if !s.binary {
		s.scan(p)
	}
	return len(p), nil
}

// Binary reports whether what was seen so far cannot be UTF-8 text,
// whatever follows.
func (s *Sniffer) Binary() bool { return s.binary }

// Incomplete reports whether what was seen so far ends inside a rune: text
// if more follows, binary if the content ends here.
func (s *Sniffer) Incomplete() bool { return len(s.partial) > 0 }

// Encoding classifies everything read so far.
func (s *Sniffer) Encoding() Encoding {
	if s.binary || len(s.partial) > 0 {
		return EncodingBinary
	}
	return EncodingUTF8
}
