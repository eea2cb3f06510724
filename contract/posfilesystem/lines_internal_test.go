package posfilesystem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// lineFile is a virtual file of numbered 32-byte lines, as large as
// asked, that records how far it was read.
type lineFile struct {
	size    int64
	maxRead atomic.Int64
}

const lineFileWidth = 32

func (f *lineFile) line(n int64) string { return fmt.Sprintf("line %026d\n", n) } // 32 bytes

func (f *lineFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off+int64(n) < f.size {
		o := off + int64(n)
		l := f.line(o/lineFileWidth + 1)
		k := copy(p[n:], l[o%lineFileWidth:])
		if k == 0 {
			panic("lineFile: a line is not lineFileWidth bytes")
		}
		n += k
	}
	if end := off + int64(n); end > f.maxRead.Load() {
		f.maxRead.Store(end)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// A line range reads the file no further than its last line (plus one
// buffer): "For large files, avoid loading entire file into memory".
func TestLineRangeReadsNoFurtherThanItsLines(t *testing.T) {
	f := &lineFile{size: 4 << 30} // 4 GiB, never materialised
	res, err := readLines(f, f.size, readRequest{start: 1000, count: 50, limit: 10 << 20, codec: codecUTF8})
	require.NoError(t, err)
	require.Equal(t, 50, res.lines)
	require.Equal(t, int64(50*lineFileWidth), res.bytes)
	require.True(t, strings.HasPrefix(res.content, f.line(1000)))
	require.True(t, strings.HasSuffix(res.content, f.line(1049)))
	require.Equal(t, -1, res.total)
	require.LessOrEqual(t, f.maxRead.Load(), int64(1050*lineFileWidth+lineBufBytes),
		"a range read must stop at its last line")
}

// Lines are split as Python's universal newlines split them, whatever the
// buffer boundaries: a reference split over random text, read through a
// tiny buffer.
func TestReadLinesMatchesUniversalNewlines(t *testing.T) {
	old := lineBufBytes
	lineBufBytes = 16 // bufio's minimum: lines, runes and "\r\n" straddle buffers
	defer func() { lineBufBytes = old }()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "é", "€", "😀", "\n", "\r", "\r\n", " ", "xyzxyzxyzxyz"}
	for i := 0; i < 500; i++ {
		var b strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		want := referenceLines(text)
		start, count := 1+rng.IntN(len(want)+2), rng.IntN(5)
		res, err := readLines(strings.NewReader(text), int64(len(text)), readRequest{start: start, count: count, limit: 1 << 20, codec: codecUTF8})
		require.NoError(t, err, "text %q", text)
		end := len(want)
		if count > 0 {
			end = min(end, start-1+count)
		}
		var wantContent string
		if start-1 < end {
			wantContent = strings.Join(want[start-1:end], "")
		}
		require.Equal(t, wantContent, res.content, "text %q start %d count %d", text, start, count)
		require.Equal(t, max(0, end-(start-1)), res.lines)
	}
}

// referenceLines is Python's text-mode line iteration.
func referenceLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

func TestReadLinesLimit(t *testing.T) {
	text := "aaaa\nbbbb\ncccc\n"
	_, err := readLines(strings.NewReader(text), int64(len(text)), readRequest{start: 1, limit: 10, codec: codecUTF8})
	require.Equal(t, errOverLimit{at: 3}, err)
	res, err := readLines(strings.NewReader(text), int64(len(text)), readRequest{start: 2, limit: 10, codec: codecUTF8})
	require.NoError(t, err)
	require.Equal(t, "bbbb\ncccc\n", res.content)
	// A line longer than the limit fails while it is read, not after.
	long := strings.Repeat("x", 1<<20)
	_, err = readLines(strings.NewReader(long), int64(len(long)), readRequest{start: 1, limit: 100, codec: codecUTF8})
	require.Equal(t, errOverLimit{at: 1}, err)
	// A negative line_count reads nothing (the document's `i >= line_count`).
	res, err = readLines(strings.NewReader(text), int64(len(text)), readRequest{start: 1, count: -1, limit: 10, codec: codecUTF8})
	require.NoError(t, err)
	require.Equal(t, 0, res.lines)
}

func TestDecodeErrorsNameTheByte(t *testing.T) {
	old := lineBufBytes
	lineBufBytes = 16
	defer func() { lineBufBytes = old }()
	for _, tc := range []struct {
		name, text string
		c          codec
		start      int
		want       string
	}{
		{"invalid start", "ok\nab\x80c\n", codecUTF8, 1, "can't decode byte 0x80 in position 5: invalid start byte"},
		{"invalid continuation", "ab\xc3(", codecUTF8, 1, "byte 0xc3 in position 2: invalid continuation byte"},
		{"truncated at line end", "ab\xe2\x82\nx", codecUTF8, 1, "byte 0xe2 in position 2: unexpected end of data"},
		{"truncated at end", "abc\xf0\x9f\x98", codecUTF8, 1, "byte 0xf0 in position 3: unexpected end of data"},
		{"rune across buffers", strings.Repeat("a", 15) + "\xe2\x82\xff", codecUTF8, 1, "byte 0xe2 in position 15: invalid continuation byte"},
		{"ascii", "plain\ncafé\n", codecASCII, 1, "'ascii' codec can't decode byte 0xc3 in position 9: ordinal not in range(128)"},
		{"skipped lines are decoded too", "\xff\nok\n", codecUTF8, 2, "byte 0xff in position 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readLines(strings.NewReader(tc.text), int64(len(tc.text)), readRequest{start: tc.start, limit: 1 << 20, codec: tc.c})
			var te *toolError
			require.ErrorAs(t, err, &te)
			require.Equal(t, errUnicodeDecode, te.typ)
			require.Contains(t, te.msg, tc.want)
		})
	}
	// A valid multi-byte rune split across buffers is fine.
	text := strings.Repeat("a", 15) + "€\n"
	res, err := readLines(strings.NewReader(text), int64(len(text)), readRequest{start: 1, limit: 1 << 20, codec: codecUTF8})
	require.NoError(t, err)
	require.Equal(t, text, res.content)
	// latin-1 decodes every byte.
	res, err = readLines(strings.NewReader("caf\xe9\r\n"), 6, readRequest{start: 1, limit: 1 << 20, codec: codecLatin1})
	require.NoError(t, err)
	require.Equal(t, "café\n", res.content)
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		c       codec
		in      string
		want    string
		wantErr string
	}{
		{codecUTF8, "héllo", "héllo", ""},
		{codecUTF8Sig, "hi", "\xef\xbb\xbfhi", ""},
		{codecASCII, "plain", "plain", ""},
		{codecASCII, "naïve", "", `'ascii' codec can't encode character '\xef' in position 2: ordinal not in range(128)`},
		{codecLatin1, "café", "caf\xe9", ""},
		{codecLatin1, "5€", "", `'latin-1' codec can't encode character '\u20ac' in position 1: ordinal not in range(256)`},
		{codecLatin1, "😀", "", `character '\U0001f600' in position 0`},
	} {
		got, err := tc.c.encode(tc.in)
		if tc.wantErr != "" {
			var te *toolError
			require.ErrorAs(t, err, &te)
			require.Equal(t, errUnicodeEncode, te.typ)
			require.Contains(t, te.msg, tc.wantErr)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, string(got))
	}
}

func TestLookupCodecNormalisesLikePython(t *testing.T) {
	for name, want := range map[string]codec{"utf-8": codecUTF8, "UTF8": codecUTF8, "utf_8": codecUTF8, "U8": codecUTF8,
		"utf-8-sig": codecUTF8Sig, "ASCII": codecASCII, "us-ascii": codecASCII, "latin-1": codecLatin1, "ISO-8859-1": codecLatin1, "latin1": codecLatin1} {
		got, err := lookupCodec(name)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	_, err := lookupCodec("utf-16")
	var te *toolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, errLookup, te.typ)
}

func TestLaxParams(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		check func(t *testing.T, p *params)
		err   string
	}{
		{raw: `{"start_line":"12","line_count":3.0,"max_size_mb":" 7 ","create_dirs":"no"}`, check: func(t *testing.T, p *params) {
			require.Equal(t, 12, *p.StartLine)
			require.Equal(t, 3, *p.LineCount)
			require.Equal(t, 7, *p.MaxSizeMB)
			require.False(t, *p.CreateDirs)
		}},
		{raw: `{"create_dirs":1,"content":null,"start_line":null}`, check: func(t *testing.T, p *params) {
			require.True(t, *p.CreateDirs)
			require.Nil(t, p.Content)
			require.Nil(t, p.StartLine)
		}},
		{raw: `{"start_line":1.5}`, err: "start_line must be an integer"},
		{raw: `{"create_dirs":2}`, err: "create_dirs must be true or false"},
		{raw: `{"content":["a"]}`, err: "content must be a string"},
		{raw: `{"encoding":1}`, err: "encoding must be a string"},
	} {
		p, err := decodeParams(json.RawMessage(tc.raw))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.raw)
			continue
		}
		require.NoError(t, err, tc.raw)
		tc.check(t, p)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234: "1,234", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, commas(n))
	}
	require.Equal(t, "hasNUL", func() string {
		nul, err := hasNUL(bytes.NewReader(append(make([]byte, 100), 'x')), 101)
		require.NoError(t, err)
		require.True(t, nul)
		return "hasNUL"
	}())
}
