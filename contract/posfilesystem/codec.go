package posfilesystem

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// codec is one of the text encodings the encoding parameter names. The
// document's tool is text-only, UTF-8 by default ("Text files only (UTF-8
// encoding) in MVP"); vfsd also serves the byte-per-character encodings
// Python names most often.
type codec int

const (
	codecUTF8    codec = iota // "utf-8", the default
	codecUTF8Sig              // "utf-8-sig": UTF-8 with a byte-order mark
	codecASCII                // "ascii"
	codecLatin1               // "latin-1" (ISO-8859-1)
)

// name is the codec's name as Python's error messages give it.
func (c codec) name() string {
	switch c {
	case codecUTF8Sig:
		return "utf-8-sig"
	case codecASCII:
		return "ascii"
	case codecLatin1:
		return "latin-1"
	}
	return "utf-8"
}

// bom is the byte-order mark utf-8-sig writes and skips.
const bom = "\xef\xbb\xbf"

// codecAliases are the names Python's codec registry resolves to the
// supported codecs, after normalisation (lower case, '-' and ' ' as '_').
var codecAliases = map[string]codec{
	"utf_8": codecUTF8, "utf8": codecUTF8, "u8": codecUTF8, "utf": codecUTF8, "cp65001": codecUTF8,
	"utf_8_sig": codecUTF8Sig, "utf8_sig": codecUTF8Sig,
	"ascii": codecASCII, "us_ascii": codecASCII, "646": codecASCII, "us": codecASCII,
	"latin_1": codecLatin1, "latin1": codecLatin1, "latin": codecLatin1, "l1": codecLatin1,
	"iso8859_1": codecLatin1, "iso_8859_1": codecLatin1, "8859": codecLatin1, "cp819": codecLatin1,
	"iso_ir_100": codecLatin1, "csisolatin1": codecLatin1,
}

// lookupCodec resolves an encoding name as Python's codecs.lookup does,
// for the codecs vfsd serves; any other name is a LookupError.
func lookupCodec(name string) (codec, error) {
	norm := strings.ToLower(strings.TrimSpace(name))
	norm = strings.NewReplacer("-", "_", " ", "_").Replace(norm)
	if c, ok := codecAliases[norm]; ok {
		return c, nil
	}
	return 0, &toolError{typ: errLookup, msg: fmt.Sprintf(
		"unknown encoding: %s; pos_filesystem reads and writes text in utf-8 (the default), utf-8-sig, ascii or latin-1", name)}
}

// encode turns content into the bytes the file holds, as Python's
// str.encode does; a character the codec cannot represent is a
// UnicodeEncodeError naming it and its position (in characters).
func (c codec) encode(content string) ([]byte, error) {
	switch c {
	case codecUTF8:
		return []byte(content), nil
	case codecUTF8Sig:
		return []byte(bom + content), nil
	}
	limit := rune(0x80)
	if c == codecLatin1 {
		limit = 0x100
	}
	out := make([]byte, 0, len(content))
	pos := 0
	for _, r := range content {
		if r >= limit {
			return nil, &toolError{typ: errUnicodeEncode, msg: fmt.Sprintf(
				"'%s' codec can't encode character %s in position %d: ordinal not in range(%d); pass encoding \"utf-8\" to write any text",
				c.name(), pyCharRepr(r), pos, limit)}
		}
		out = append(out, byte(r))
		pos++
	}
	return out, nil
}

// pyCharRepr renders a character as Python's error messages do: '\xe9',
// '\u20ac', '\U0001f600'.
func pyCharRepr(r rune) string {
	switch {
	case r < 0x100:
		return fmt.Sprintf(`'\x%02x'`, r)
	case r < 0x10000:
		return fmt.Sprintf(`'\u%04x'`, r)
	}
	return fmt.Sprintf(`'\U%08x'`, r)
}

// decodeLine turns the bytes of one line (already validated by a
// validator) into text.
func (c codec) decodeLine(dst *strings.Builder, b []byte) {
	if c != codecLatin1 {
		dst.Write(b)
		return
	}
	for _, x := range b {
		dst.WriteRune(rune(x))
	}
}

// validator checks that bytes decode in a codec, fed in pieces (a line may
// span many buffers): it carries an incomplete UTF-8 sequence from one
// piece to the next, and reports the first undecodable byte with its
// offset in the file, as Python's UnicodeDecodeError does.
type validator struct {
	c        codec
	carry    [utf8.UTFMax]byte
	n        int   // bytes in carry
	carryOff int64 // file offset of carry[0]
}

// feed checks b, which starts at file offset off.
func (v *validator) feed(b []byte, off int64) error {
	switch v.c {
	case codecLatin1:
		return nil // every byte is a character
	case codecASCII:
		for i, x := range b {
			if x >= 0x80 {
				return decodeError(v.c, x, off+int64(i), "ordinal not in range(128)")
			}
		}
		return nil
	}
	if v.n > 0 {
		k := min(len(b), utf8.UTFMax-v.n)
		var tmp [2 * utf8.UTFMax]byte
		m := copy(tmp[:], v.carry[:v.n])
		m += copy(tmp[m:], b[:k])
		r, size := utf8.DecodeRune(tmp[:m])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(tmp[:m]) { // still incomplete: b was shorter than the rest of the rune
				copy(v.carry[v.n:], b)
				v.n += len(b)
				return nil
			}
			return decodeError(v.c, tmp[0], v.carryOff, utf8Reason(tmp[:m]))
		}
		used := size - v.n
		b, off, v.n = b[used:], off+int64(used), 0
	}
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if !utf8.FullRune(b[i:]) {
				v.n = copy(v.carry[:], b[i:])
				v.carryOff = off + int64(i)
				return nil
			}
			return decodeError(v.c, b[i], off+int64(i), utf8Reason(b[i:]))
		}
		i += size
	}
	return nil
}

// end says the text ends here (a line break or the end of the file): a
// sequence still incomplete is an error.
func (v *validator) end() error {
	if v.n == 0 {
		return nil
	}
	v.n = 0
	return decodeError(v.c, v.carry[0], v.carryOff, "unexpected end of data")
}

// utf8Reason is Python's word for an invalid sequence starting at b[0].
func utf8Reason(b []byte) string {
	x := b[0]
	if (x >= 0x80 && x < 0xc2) || x >= 0xf5 {
		return "invalid start byte"
	}
	return "invalid continuation byte"
}

func decodeError(c codec, x byte, off int64, reason string) error {
	return &toolError{typ: errUnicodeDecode, msg: fmt.Sprintf(
		"'%s' codec can't decode byte 0x%02x in position %d: %s; the file is not %s text: pass its encoding (for example \"latin-1\")",
		c.name(), x, off, reason, c.name())}
}
