package weakincentives

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vfsd/vfsd/internal/strictjson"
	"github.com/vfsd/vfsd/vfs"
)

// The document's size and path guards ("Data Model": "Maximum content
// length per write: 48_000 characters ...; Maximum path depth: 16
// segments; maximum segment length: 80 characters"). A session policy
// with its own caps (MaxWriteChars, MaxDepth, MaxSegmentLen) overrides
// them; see DecodePolicy.
const (
	MaxWriteLength   = 48_000
	MaxPathDepth     = 16
	MaxSegmentLength = 80
)

// VfsPath is the document's path: relative segments, e.g. ("src",
// "main.py"). On the wire it is {"segments": ["src", "main.py"]}; a plain
// string "src/main.py" is accepted too.
type VfsPath struct {
	Segments []string `json:"segments"`
}

// String renders the path as the messages show it: "src/main.py", "." for
// the root.
func (p VfsPath) String() string {
	if len(p.Segments) == 0 {
		return "."
	}
	return strings.Join(p.Segments, "/")
}

// vfsPath is the session path p names.
func (p VfsPath) vfsPath() vfs.Path {
	if len(p.Segments) == 0 {
		return vfs.Root
	}
	return vfs.Path(strings.Join(p.Segments, "/"))
}

// pathOf is the document's path of session path p.
func pathOf(p vfs.Path) VfsPath {
	if p.IsRoot() {
		return VfsPath{Segments: []string{}}
	}
	return VfsPath{Segments: p.Segments()}
}

// MarshalJSON writes {"segments": [...]}, never null segments.
func (p VfsPath) MarshalJSON() ([]byte, error) {
	segs := p.Segments
	if segs == nil {
		segs = []string{}
	}
	return json.Marshal(struct {
		Segments []string `json:"segments"`
	}{segs})
}

// UnmarshalJSON reads {"segments": [...]} (strictly) or a string.
func (p *VfsPath) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		p.Segments = []string{s}
		if s == "" {
			p.Segments = []string{}
		}
		return nil
	}
	var obj struct {
		Segments []string `json:"segments"`
	}
	if err := strictjson.Decode(b, &obj); err != nil {
		return fmt.Errorf("a VfsPath is {\"segments\": [\"dir\", \"file\"]} or a string \"dir/file\": %w", err)
	}
	if obj.Segments == nil {
		obj.Segments = []string{}
	}
	p.Segments = obj.Segments
	return nil
}

// limits are the path and size guards in force for one call.
type limits struct {
	depth, segment, write int64
}

// normalize turns p into the canonical form the document describes: "Paths
// are relative, ASCII-only, and split into segments that exclude . and ..
// Handlers collapse duplicate slashes and reject empty segments". A
// segment may itself hold slashes ("src/main.py"); they split it.
func (l limits) normalize(p VfsPath) (VfsPath, error) {
	out := []string{}
	for _, seg := range p.Segments {
		if seg == "" {
			return VfsPath{}, invalid("Path segments must not be empty; give segments like [\"src\", \"main.py\"].")
		}
		if strings.HasPrefix(seg, "/") {
			return VfsPath{}, invalid("Absolute paths are not allowed in the VFS; give a path relative to the VFS root, such as \"docs/readme.md\".")
		}
		for piece := range strings.SplitSeq(seg, "/") {
			switch piece {
			case "":
				continue // duplicate or trailing slash
			case ".", "..":
				return VfsPath{}, invalid("Path segments may not include '.' or '..'; give the path from the VFS root.")
			}
			if !isASCII(piece) {
				return VfsPath{}, invalid("Path segment %q must be ASCII text.", piece)
			}
			if int64(len(piece)) > l.segment {
				return VfsPath{}, invalid("Path segments must be %d characters or fewer; %q has %d.", l.segment, piece, len(piece))
			}
			out = append(out, piece)
		}
	}
	if int64(len(out)) > l.depth {
		return VfsPath{}, invalid("Path depth exceeds the allowed limit (%d segments); this path has %d.", l.depth, len(out))
	}
	return VfsPath{Segments: out}, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
