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
	binary  bool   // a NUL byte or invalid UTF-8 was seen
	invalid bool   // invalid UTF-8 was seen (NUL bytes are valid UTF-8)
	partial []byte // an incomplete rune at the end of what was read so far
	// validate keeps checking UTF-8 after a NUL byte (ValidUTF8); without
	// it a NUL ends the scan.
	validate bool
}

// NewSniffer returns a reader of r that classifies what passes through it.
func NewSniffer(r io.Reader) *Sniffer { return &Sniffer{r: r} }

// NewTextSniffer is NewSniffer that also tells, through ValidUTF8, whether
// content with NUL bytes is UTF-8: it reads on past the first NUL.
func NewTextSniffer(r io.Reader) *Sniffer { return &Sniffer{r: r, validate: true} }

// done reports that nothing more can change the classification.
func (s *Sniffer) done() bool { return s.invalid || (s.binary && !s.validate) }

// Read implements io.Reader.
func (s *Sniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && !s.done() {
		s.scan(p[:n])
	}
	return n, err
}

// scan classifies b, the next part of the content. With validate, once a
// NUL byte makes the content binary it still checks that it is UTF-8
// (ValidUTF8): a writer may declare text that holds NUL bytes.
func (s *Sniffer) scan(b []byte) {
	if !s.binary && bytes.IndexByte(b, 0) >= 0 {
		s.binary = true
		if !s.validate {
			return
		}
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
			s.binary, s.invalid = true, true
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
		s.binary, s.invalid = true, true
		return
	}
	s.partial = append(s.partial, b[cut:]...)
}

// Write classifies p as the next part of the content, for callers that
// read the content themselves; a zero Sniffer is ready for it. It never
// fails.
func (s *Sniffer) Write(p []byte) (int, error) {
	if !s.done() {
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

// ValidUTF8 reports whether everything read so far is UTF-8, NUL bytes
// allowed: text a writer may declare as such (WriteOptions.Encoding). Only
// a NewTextSniffer knows it past a NUL byte.
func (s *Sniffer) ValidUTF8() bool {
	return !s.invalid && len(s.partial) == 0 && (s.validate || !s.binary)
}

// Encoding classifies everything read so far.
func (s *Sniffer) Encoding() Encoding {
	if s.binary || len(s.partial) > 0 {
		return EncodingBinary
	}
	return EncodingUTF8
}
