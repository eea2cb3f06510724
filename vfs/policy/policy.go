// Package policy says what a session's tools may do: which operations,
// where they may read and write, which paths are off limits (hidden files,
// non-ASCII names, deep or long paths), how symlinks are treated, and the
// caps that bound every request.
//
// A Policy is plain data, safe to share and to serialise. Its Hook plugs the
// path rules into the session engine (vfs.Options.Policy), so that a rule
// holds for every caller, tools and FUSE mount alike; the tools layer adds
// the operation list, symlink resolution and caps.
//
// Caps are upper bounds: a request's own limit is clamped to the cap with
// Clamp (effective = min(request, cap)); a zero cap means the policy does
// not bound that quantity.
package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/vfs"
)

// SymlinkPolicy says whether the tools follow symlinks they meet in a
// path.
type SymlinkPolicy string

// The symlink policies.
const (
	// SymlinksDeny refuses any path that runs through a symlink (forbidden).
	SymlinksDeny SymlinkPolicy = "deny"
	// SymlinksWithinRoot follows a symlink only when its target, resolved
	// against the link's directory, stays inside the session; the default.
	SymlinksWithinRoot SymlinkPolicy = "within_root_only"
	// SymlinksAllow follows every symlink; an absolute target names a
	// session path (the session root is "/"), and ".." never climbs above
	// the root.
	SymlinksAllow SymlinkPolicy = "allow"
)

// Policy is what a session's tools may do.
type Policy struct {
	// Name is the preset the policy came from, or "custom" (or the name a
	// policy object gave itself; see Decode).
	Name string `json:"name"`
	// Base is the preset a policy object started from (see Decode); empty
	// for the presets themselves.
	Base string `json:"base,omitempty"`
	// AllowedOps lists the tool operations allowed (read_file, grep, ...);
	// empty allows every operation.
	AllowedOps []string `json:"allowed_ops,omitempty"`
	// ReadRoots and WriteRoots restrict reads and writes to these session
	// directories and everything beneath them; empty means the whole
	// session. Writes must also be readable: a write root outside every
	// read root is unreachable for edits.
	ReadRoots  []string `json:"read_roots,omitempty"`
	WriteRoots []string `json:"write_roots,omitempty"`
	// DenyHidden forbids paths with a segment starting with '.'.
	DenyHidden bool `json:"deny_hidden,omitempty"`
	// ASCIIOnly forbids paths with bytes outside printable ASCII.
	ASCIIOnly bool `json:"ascii_only,omitempty"`
	// RejectDotDot forbids ".." in any path a tool is given (the engine
	// already never resolves it; this reports forbidden instead of
	// invalid_path).
	RejectDotDot bool `json:"reject_dot_dot,omitempty"`
	// Symlinks is how tools treat symlinks in paths.
	Symlinks SymlinkPolicy `json:"symlinks"`
	// Checkpoints lets the session's agent checkpoint and undo its own
	// work with the checkpoint tools (checkpoint, list_checkpoints,
	// diff_since, undo_to). Off by default: the admin turns it on.
	Checkpoints bool `json:"checkpoints,omitempty"`
	// NumericCodes also reports each error code as the number of the X07
	// error code (FS v1's table, 60001–60020) that means the same, where
	// X07 has one (tools.Code.Number).
	NumericCodes bool `json:"numeric_codes,omitempty"`
	// Caps bound every request.
	Caps Caps `json:"caps"`
}

// Caps are the policy's upper bounds; zero means unbounded.
type Caps struct {
	MaxReadBytes        int64 `json:"max_read_bytes,omitempty"`        // bytes one read returns
	MaxWriteBytes       int64 `json:"max_write_bytes,omitempty"`       // bytes one write stores
	MaxWriteChars       int64 `json:"max_write_chars,omitempty"`       // characters of text one write stores
	MaxPatchBytes       int64 `json:"max_patch_bytes,omitempty"`       // size of one patch
	MaxInlineBytes      int64 `json:"max_inline_bytes,omitempty"`      // payloads larger go out as blobs
	MaxGrepResults      int64 `json:"max_grep_results,omitempty"`      // lines or files one grep returns
	MaxGlobResults      int64 `json:"max_glob_results,omitempty"`      // paths one glob returns
	MaxScannedFiles     int64 `json:"max_scanned_files,omitempty"`     // files one search reads
	MaxScannedBytes     int64 `json:"max_scanned_bytes,omitempty"`     // bytes one search reads
	MaxChangedFiles     int64 `json:"max_changed_files,omitempty"`     // files one patch changes
	MaxEditReplacements int64 `json:"max_edit_replacements,omitempty"` // replacements one edit makes
	MaxEntries          int64 `json:"max_entries,omitempty"`           // entries one listing returns
	MaxDepth            int64 `json:"max_depth,omitempty"`             // segments in a path
	MaxWalkDepth        int64 `json:"max_walk_depth,omitempty"`        // levels one walk descends below its root (x07 fs.max_depth)
	MaxSegmentLen       int64 `json:"max_segment_len,omitempty"`       // bytes in one path segment
	MaxSessionBytes     int64 `json:"max_session_bytes,omitempty"`     // total file bytes in the session
	MaxSessionFiles     int64 `json:"max_session_files,omitempty"`     // files, directories and symlinks in the session
	// MaxForks bounds the open forks session tokens make, starting from
	// one session the admin created: its forks, their forks and so on
	// share this budget. The admin's forks are not counted.
	MaxForks int64 `json:"max_forks,omitempty"`
}

// Clamp returns the effective limit of a request: the smaller of request
// and cap, where zero means "none given" on either side. Clamp(0, 0) is 0:
// unbounded.
func Clamp(request, cap int64) int64 {
	switch {
	case cap <= 0:
		return max(request, 0)
	case request <= 0 || request > cap:
		return cap
	}
	return request
}

// Allows reports whether the policy allows the operation op.
func (p *Policy) Allows(op string) bool {
	return len(p.AllowedOps) == 0 || slices.Contains(p.AllowedOps, op)
}

// Validate checks that the policy is usable: a known symlink policy,
// canonical roots, non-negative caps, known operations are the caller's
// business.
func (p *Policy) Validate() error {
	switch p.Symlinks {
	case SymlinksDeny, SymlinksWithinRoot, SymlinksAllow:
	case "":
		return fmt.Errorf("policy %q: symlinks must be one of deny, within_root_only, allow", p.Name)
	default:
		return fmt.Errorf("policy %q: unknown symlink policy %q (want deny, within_root_only or allow)", p.Name, p.Symlinks)
	}
	for _, roots := range [][]string{p.ReadRoots, p.WriteRoots} {
		for _, r := range roots {
			if r == "/" || r == "" {
				continue
			}
			if _, err := vfs.ParsePath(r); err != nil {
				return fmt.Errorf("policy %q: root %q: %w", p.Name, r, err)
			}
		}
	}
	if p.Caps.hasNegative() {
		return fmt.Errorf("policy %q: caps must not be negative", p.Name)
	}
	return nil
}

func (c Caps) hasNegative() bool {
	for _, v := range []int64{c.MaxReadBytes, c.MaxWriteBytes, c.MaxWriteChars, c.MaxPatchBytes,
		c.MaxInlineBytes, c.MaxGrepResults, c.MaxGlobResults, c.MaxScannedFiles, c.MaxScannedBytes,
		c.MaxChangedFiles, c.MaxEditReplacements, c.MaxEntries, c.MaxDepth, c.MaxSegmentLen, c.MaxSessionBytes, c.MaxSessionFiles, c.MaxForks} {
		if v < 0 {
			return true
		}
	}
	return false
}

// CheckInput vets a path as a tool received it, before it is parsed:
// RejectDotDot and ASCIIOnly apply to the raw text.
func (p *Policy) CheckInput(raw string) error {
	if p.RejectDotDot && hasDotDot(raw) {
		return forbidden(raw, `".." is not allowed in paths under this policy; use a path from the session root`)
	}
	return nil
}

func hasDotDot(raw string) bool {
	for seg := range strings.SplitSeq(raw, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// Check reports whether access a to path p is allowed, as a vfs.Error with
// code forbidden and a message saying which rule refused it.
func (p *Policy) Check(a vfs.Access, path vfs.Path) error {
	if path.IsRoot() {
		if a == vfs.AccessWrite && len(p.WriteRoots) > 0 {
			return forbidden(path.String(), "writes are limited to "+strings.Join(p.WriteRoots, ", "))
		}
		return nil
	}
	segs := path.Segments()
	if p.Caps.MaxDepth > 0 && int64(len(segs)) > p.Caps.MaxDepth {
		return forbidden(path.String(), fmt.Sprintf("path has %d segments; this policy allows at most %d", len(segs), p.Caps.MaxDepth))
	}
	for _, seg := range segs {
		if p.Caps.MaxSegmentLen > 0 && int64(len(seg)) > p.Caps.MaxSegmentLen {
			return forbidden(path.String(), fmt.Sprintf("segment %q is %d bytes; this policy allows at most %d", seg, len(seg), p.Caps.MaxSegmentLen))
		}
		if p.DenyHidden && strings.HasPrefix(seg, ".") {
			return forbidden(path.String(), "hidden paths (a segment starting with '.') are not allowed under this policy")
		}
		if p.ASCIIOnly && !isPrintableASCII(seg) {
			return forbidden(path.String(), "only printable ASCII paths are allowed under this policy")
		}
	}
	roots := p.ReadRoots
	what := "reads"
	if a == vfs.AccessWrite {
		roots, what = p.WriteRoots, "writes"
	}
	if len(roots) > 0 && !underAny(path, roots) {
		return forbidden(path.String(), what+" are limited to "+strings.Join(roots, ", "))
	}
	return nil
}

// Hidden reports whether the policy hides path from listings and searches:
// whether a read of it would be refused.
func (p *Policy) Hidden(path vfs.Path) bool { return p.Check(vfs.AccessRead, path) != nil }

// Hook returns the path rules as an engine policy, for vfs.Options.Policy.
func (p *Policy) Hook() vfs.Policy {
	return func(a vfs.Access, path vfs.Path) error { return p.Check(a, path) }
}

func underAny(path vfs.Path, roots []string) bool {
	for _, r := range roots {
		if r == "/" || r == "" {
			return true
		}
		rp, err := vfs.ParsePath(r)
		if err == nil && path.HasPrefix(rp) {
			return true
		}
	}
	return false
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func forbidden(path, msg string) error {
	return &vfs.Error{Op: "policy", Path: path, Code: vfs.CodeForbidden, Msg: msg}
}
