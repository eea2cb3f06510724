package vfs

import (
	"encoding/binary"
	"sort"
	"strings"
)

// Limits on extended attributes, as Linux has them.
const (
	MaxXattrName  = 255       // bytes in a name (XATTR_NAME_MAX)
	MaxXattrValue = 64 << 10  // bytes in one value (XATTR_SIZE_MAX)
	MaxXattrBytes = 256 << 10 // names and values of one node together
)

// XattrFlags tune SetXattr as setxattr(2)'s flags do.
type XattrFlags uint8

// SetXattr flags.
const (
	XattrCreate  XattrFlags = 1 // fail with already_exists if the attribute exists (XATTR_CREATE)
	XattrReplace XattrFlags = 2 // fail with no_data if it does not (XATTR_REPLACE)
)

// Xattrs is a node's extended attributes: an immutable map from name to
// value, sorted by name. The zero value is empty. It is comparable and
// cheap to copy; every change returns a new value.
type Xattrs struct {
	// enc is the canonical encoding: for each attribute in name order,
	// uvarint name length, name, uvarint value length, value.
	enc string
}

// Len returns the number of attributes.
func (x Xattrs) Len() int {
	n := 0
	x.each(func(string, string) bool { n++; return true })
	return n
}

// IsEmpty reports whether there are no attributes.
func (x Xattrs) IsEmpty() bool { return x.enc == "" }

// Bytes is the size of all names and values together.
func (x Xattrs) Bytes() int {
	n := 0
	x.each(func(k, v string) bool { n += len(k) + len(v); return true })
	return n
}

// each calls fn for every attribute in name order until it returns false.
func (x Xattrs) each(fn func(name, value string) bool) {
	s := x.enc
	for len(s) > 0 {
		kl, n := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		s = s[n:]
		k := s[:kl]
		s = s[kl:]
		vl, n := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		s = s[n:]
		v := s[:vl]
		s = s[vl:]
		if !fn(k, v) {
			return
		}
	}
}

// Get returns the value of name.
func (x Xattrs) Get(name string) ([]byte, bool) {
	var out []byte
	found := false
	x.each(func(k, v string) bool {
		if k == name {
			out, found = []byte(v), true
			return false
		}
		return k < name
	})
	return out, found
}

// Names returns the attribute names in order.
func (x Xattrs) Names() []string {
	var out []string
	x.each(func(k, _ string) bool { out = append(out, k); return true })
	return out
}

// Map returns the attributes as a map (a copy).
func (x Xattrs) Map() map[string][]byte {
	out := map[string][]byte{}
	x.each(func(k, v string) bool { out[k] = []byte(v); return true })
	return out
}

// XattrsOf builds Xattrs from a map, checking the limits.
func XattrsOf(m map[string][]byte) (Xattrs, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	total := 0
	for _, k := range names {
		if err := checkXattr(k, m[k]); err != nil {
			return Xattrs{}, err
		}
		total += len(k) + len(m[k])
		b = appendXattr(b, k, string(m[k]))
	}
	if total > MaxXattrBytes {
		return Xattrs{}, xattrTooBig()
	}
	return Xattrs{enc: string(b)}, nil
}

func appendXattr(b []byte, k, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func xattrTooBig() *Error {
	return &Error{Code: CodeNoSpace, Msg: "extended attributes would exceed 256 KiB for this node; remove some first"}
}

// checkXattr validates one attribute.
func checkXattr(name string, value []byte) error {
	switch {
	case name == "":
		return &Error{Code: CodeInvalid, Msg: "extended attribute name is empty"}
	case len(name) > MaxXattrName:
		return &Error{Code: CodeTooLarge, Msg: "extended attribute name is longer than 255 bytes"}
	case strings.IndexByte(name, 0) >= 0:
		return &Error{Code: CodeInvalid, Msg: "extended attribute name contains a NUL byte"}
	case len(value) > MaxXattrValue:
		return &Error{Code: CodeTooLarge, Msg: "extended attribute value is larger than 64 KiB"}
	}
	return nil
}

// With returns x with name set to value, honouring flags: XattrCreate
// fails (already_exists) if name is set, XattrReplace fails (no_data) if it
// is not. Limits are checked.
func (x Xattrs) With(name string, value []byte, flags XattrFlags) (Xattrs, error) {
	if err := checkXattr(name, value); err != nil {
		return x, err
	}
	_, exists := x.Get(name)
	switch {
	case exists && flags&XattrCreate != 0:
		return x, &Error{Code: CodeExists, Msg: "extended attribute " + name + " already exists"}
	case !exists && flags&XattrReplace != 0:
		return x, &Error{Code: CodeNoData, Msg: "no extended attribute " + name}
	}
	var b []byte
	total := len(name) + len(value)
	done := false
	x.each(func(k, v string) bool {
		if !done && k >= name {
			b = appendXattr(b, name, string(value))
			done = true
		}
		if k != name {
			b = appendXattr(b, k, v)
			total += len(k) + len(v)
		}
		return true
	})
	if !done {
		b = appendXattr(b, name, string(value))
	}
	if total > MaxXattrBytes {
		return x, xattrTooBig()
	}
	return Xattrs{enc: string(b)}, nil
}

// Without returns x without name; no_data if it is not set.
func (x Xattrs) Without(name string) (Xattrs, error) {
	if _, ok := x.Get(name); !ok {
		return x, &Error{Code: CodeNoData, Msg: "no extended attribute " + name}
	}
	var b []byte
	x.each(func(k, v string) bool {
		if k != name {
			b = appendXattr(b, k, v)
		}
		return true
	})
	return Xattrs{enc: string(b)}, nil
}

// decodeXattrs parses the canonical encoding (count first, as the node
// codec writes it), refusing anything not canonical.
func decodeXattrs(d *nodeDecoder) Xattrs {
	count := d.uvarint()
	var b []byte
	prev := ""
	total := 0
	for i := uint64(0); i < count && d.err == nil; i++ {
		k := string(d.bytes(d.uvarint()))
		v := d.bytes(d.uvarint())
		if d.err != nil {
			break
		}
		if (i > 0 && k <= prev) || checkXattr(k, v) != nil {
			d.err = ErrBadEncoding
			break
		}
		total += len(k) + len(v)
		prev = k
		b = appendXattr(b, k, string(v))
	}
	if count == 0 || total > MaxXattrBytes {
		d.err = ErrBadEncoding // a flagged field is never empty
	}
	if d.err != nil {
		return Xattrs{}
	}
	return Xattrs{enc: string(b)}
}

// appendXattrs appends the canonical encoding: count, then the pairs.
func appendXattrs(b []byte, x Xattrs) []byte {
	b = binary.AppendUvarint(b, uint64(x.Len()))
	return append(b, x.enc...)
}
