package vfs

import (
	"fmt"
	"strings"
)

// MaxSymlinkHops bounds how many symlinks one resolution follows, like the
// kernel's ELOOP (Linux's MAXSYMLINKS is 40).
const MaxSymlinkHops = 40

// SymlinkOptions say how Tree.ResolveSymlinks and Tree.ResolveSymlinksText
// treat the symlinks they meet. The engine itself never follows a symlink:
// the tool layers and contracts do, through these two functions, each
// setting the options from its policy.
type SymlinkOptions struct {
	// Follow: symlinks on the way are followed. When false, the first
	// symlink met (other than an unfollowed last segment) is
	// SymlinkNotFollowed.
	Follow bool
	// NoFollowLast: the last segment is not followed when it is a symlink
	// (lstat, unlink, rename), so the path names the link itself.
	NoFollowLast bool
	// WithinRoot: a target that leaves the session (absolute, or climbing
	// above the root) is SymlinkEscapes. When false, an absolute target
	// names a session path (the session root is "/").
	WithinRoot bool
}

// SymlinkReason says why a resolution stopped.
type SymlinkReason int

// The reasons of a *SymlinkError.
const (
	// SymlinkNotFollowed: Link is a symlink and SymlinkOptions.Follow is
	// false.
	SymlinkNotFollowed SymlinkReason = iota + 1
	// SymlinkLoop: more than MaxSymlinkHops symlinks were followed.
	SymlinkLoop
	// SymlinkEscapes: Link's Target leaves the session and
	// SymlinkOptions.WithinRoot is set.
	SymlinkEscapes
	// SymlinkBadTarget: Link's Target is not a session path; Err is the
	// ParsePath error.
	SymlinkBadTarget
	// SymlinkBadPath: (ResolveSymlinksText only) a segment of the text, or
	// the path it resolves to, is not a session path; Err is the ParsePath
	// error.
	SymlinkBadPath
	// SymlinkAboveRoot: (ResolveSymlinksText only) a ".." climbs above the
	// session root, in the text or in a symlink's target.
	SymlinkAboveRoot
)

// SymlinkError is why a resolution stopped. Callers word it for their
// users: the engine's own message (Error) is for logs.
type SymlinkError struct {
	Reason SymlinkReason
	Link   Path   // the symlink resolution stopped at; Root for SymlinkLoop, SymlinkBadPath and SymlinkAboveRoot
	Target string // Link's target, for SymlinkEscapes and SymlinkBadTarget
	Err    error  // the ParsePath error, for SymlinkBadTarget and SymlinkBadPath
}

func (e *SymlinkError) Error() string {
	switch e.Reason {
	case SymlinkNotFollowed:
		return fmt.Sprintf("%s is a symlink, and symlinks are not followed", e.Link)
	case SymlinkLoop:
		return "too many levels of symlinks"
	case SymlinkEscapes:
		return fmt.Sprintf("symlink %s points to %q, outside the session", e.Link, e.Target)
	case SymlinkBadTarget:
		return fmt.Sprintf("symlink %s has a target %q that is not a session path", e.Link, e.Target)
	case SymlinkBadPath:
		return fmt.Sprintf("not a session path: %v", e.Err)
	case SymlinkAboveRoot:
		return `".." climbs above the session root`
	}
	return "symlink resolution failed"
}

// Unwrap returns the ParsePath error of SymlinkBadTarget and SymlinkBadPath.
func (e *SymlinkError) Unwrap() error { return e.Err }

// ResolveSymlinks follows the symlinks in p, within t, to the path they lead
// to. A target is taken as ResolveLinkTarget takes it: from the link's
// directory, ".." folded lexically and never above the root. A failed
// lookup is returned as Lookup gave it (an unreadable directory is not a
// missing one); a missing segment ends the following, so a path to a file
// yet to be created resolves through its existing parents. Every other
// error is a *SymlinkError.
func (t Tree) ResolveSymlinks(p Path, o SymlinkOptions) (Path, error) {
	return t.resolveSymlinks(p.Segments(), o, false)
}

// ResolveSymlinksText follows the symlinks in raw, a slash-separated text
// that may hold empty, "." and ".." segments, the way the kernel and
// Python's pathlib resolve do: ".." is taken after the symlinks before it
// (the parent of where a link led, not of the link), a target's text is
// walked in place, and an absolute target restarts at the session root. A
// ".." above the root, in raw or in a target, is SymlinkAboveRoot, whatever
// the options. Raw itself is taken from the root whether or not it starts
// with a slash. Errors are as ResolveSymlinks's, plus SymlinkBadPath for a
// segment or a result that is no session path.
func (t Tree) ResolveSymlinksText(raw string, o SymlinkOptions) (Path, error) {
	return t.resolveSymlinks(strings.Split(raw, "/"), o, true)
}

// resolveSymlinks walks queue, the segments still to resolve, from the
// root. Text mode takes ".." physically and a target's text in place;
// otherwise queue is canonical and a target is resolved lexically.
func (t Tree) resolveSymlinks(queue []string, o SymlinkOptions, text bool) (Path, error) {
	var cur []string // resolved: no symlink on the way, but the last segment may be an unfollowed one
	hops := 0
	for len(queue) > 0 {
		seg := queue[0]
		queue = queue[1:]
		if text {
			switch seg {
			case "", ".":
				continue
			case "..":
				if len(cur) == 0 {
					return "", &SymlinkError{Reason: SymlinkAboveRoot}
				}
				cur = cur[:len(cur)-1]
				continue
			}
			if _, err := ParsePath(seg); err != nil {
				return "", &SymlinkError{Reason: SymlinkBadPath, Err: err}
			}
		}
		next := append(cur, seg)
		link := Path(strings.Join(next, "/"))
		n, ok, err := t.Lookup(link)
		if err != nil {
			return "", err
		}
		if !ok || !n.IsSymlink() || (len(queue) == 0 && o.NoFollowLast) {
			cur = next
			continue
		}
		if !o.Follow {
			return "", &SymlinkError{Reason: SymlinkNotFollowed, Link: link}
		}
		if hops++; hops > MaxSymlinkHops {
			return "", &SymlinkError{Reason: SymlinkLoop}
		}
		if text {
			if strings.HasPrefix(n.Target, "/") {
				if o.WithinRoot {
					return "", &SymlinkError{Reason: SymlinkEscapes, Link: link, Target: n.Target}
				}
				cur = cur[:0]
			}
			queue = append(strings.Split(n.Target, "/"), queue...)
			continue
		}
		q, escapes, err := ResolveLinkTarget(Path(strings.Join(cur, "/")), n.Target)
		if escapes && o.WithinRoot {
			return "", &SymlinkError{Reason: SymlinkEscapes, Link: link, Target: n.Target}
		}
		if err != nil {
			return "", &SymlinkError{Reason: SymlinkBadTarget, Link: link, Target: n.Target, Err: err}
		}
		queue = append(q.Segments(), queue...)
		cur = cur[:0]
	}
	if !text {
		return Path(strings.Join(cur, "/")), nil
	}
	if len(cur) == 0 {
		return Root, nil
	}
	p, err := ParsePath(strings.Join(cur, "/"))
	if err != nil {
		return "", &SymlinkError{Reason: SymlinkBadPath, Err: err}
	}
	return p, nil
}
