package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Entry describes one node in a listing or a stat.
type Entry struct {
	Path      string `json:"path"`
	Kind      string `json:"kind" jsonschema:"file, dir or symlink"`
	SizeBytes int64  `json:"size_bytes"`
	Target    string `json:"target,omitempty" jsonschema:"a symlink's target"`
}

func entryOf(p vfs.Path, n vfs.Node) Entry {
	return Entry{Path: p.Rel(), Kind: n.Kind.String(), SizeBytes: n.Size, Target: n.Target}
}

// ListDirectoryParams are list_directory's parameters.
type ListDirectoryParams struct {
	Path       string   `json:"path,omitempty" jsonschema:"directory to list (default: the workspace root)"`
	Depth      *int     `json:"depth,omitempty" jsonschema:"levels to descend (default 1: direct entries only)"`
	Ignore     []string `json:"ignore,omitempty" jsonschema:"glob patterns (doublestar) of entries to leave out, matched against the path relative to the listed directory and the entry's name"`
	MaxEntries int      `json:"max_entries,omitempty" jsonschema:"at most this many entries"`
}

// ListDirectoryReceipt is list_directory's receipt.
type ListDirectoryReceipt struct {
	Receipt
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries" jsonschema:"sorted by path; paths relative to the workspace root"`
	Truncated bool    `json:"truncated" jsonschema:"more entries existed than max_entries, or than fit in one result"`
	view      string
}

func (r *ListDirectoryReceipt) text() string { return r.view }

// StatParams are the parameters of stat and exists.
type StatParams struct {
	Path string `json:"path" jsonschema:"path to look at, relative to the workspace root"`
}

// StatReceipt is stat's receipt. A symlink is described itself, not its
// target.
type StatReceipt struct {
	Receipt
	Entry
	Mode      string `json:"mode" jsonschema:"permission bits, octal"`
	Version   uint64 `json:"version"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf-8 or binary, for files"`
	CreatedAt string `json:"created_at" jsonschema:"RFC 3339, UTC, milliseconds"`
	UpdatedAt string `json:"updated_at" jsonschema:"RFC 3339, UTC, milliseconds"`
}

func (r *StatReceipt) text() string { return r.SummaryText }

// ExistsReceipt is exists's receipt.
type ExistsReceipt struct {
	Receipt
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Kind   string `json:"kind,omitempty" jsonschema:"file, dir or symlink, when it exists"`
}

func (r *ExistsReceipt) text() string { return r.SummaryText }

// MkdirParams are mkdir's parameters.
type MkdirParams struct {
	Path    string `json:"path" jsonschema:"directory to create"`
	Parents *bool  `json:"parents,omitempty" jsonschema:"create missing parents, and succeed if the directory exists (default true)"`
}

// MkdirReceipt is mkdir's receipt.
type MkdirReceipt struct {
	Receipt
	Path    string `json:"path"`
	Created bool   `json:"created" jsonschema:"false when the directory already existed"`
}

func (r *MkdirReceipt) text() string { return r.SummaryText }

// DeleteFileParams are delete_file's parameters.
type DeleteFileParams struct {
	Path         string `json:"path" jsonschema:"file, symlink or directory to delete"`
	Recursive    bool   `json:"recursive,omitempty" jsonschema:"delete a directory with everything in it; without it a directory must be empty"`
	AllowMissing bool   `json:"allow_missing,omitempty" jsonschema:"succeed when the path does not exist"`
}

// DeleteFileReceipt is delete_file's receipt.
type DeleteFileReceipt struct {
	Receipt
	Path    string `json:"path"`
	Deleted bool   `json:"deleted" jsonschema:"false when the path did not exist (allow_missing)"`
	Kind    string `json:"kind,omitempty"`
	Removed int    `json:"removed" jsonschema:"nodes removed, the path itself included"`
}

func (r *DeleteFileReceipt) text() string { return r.SummaryText }

// RenameParams are rename's parameters.
type RenameParams struct {
	From      string `json:"from" jsonschema:"path to move"`
	To        string `json:"to" jsonschema:"new path; missing parents are created"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"replace an existing destination (a file, or an empty directory)"`
}

// RenameReceipt is rename's receipt.
type RenameReceipt struct {
	Receipt
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

func (r *RenameReceipt) text() string { return r.SummaryText }

func init() {
	register("list_directory", "List a directory of the workspace: entries sorted by path with kind and size, to a depth (default 1). Start here: the workspace holds only what was mounted into it.",
		false, nil, listDirectory)
	register("stat", "Describe a path: kind, size, mode, version and times. A symlink is described itself.", false, nil, statTool)
	register("exists", "Check whether a path exists, and its kind.", false, nil, exists)
	register("mkdir", "Create a directory, with missing parents (parents defaults to true).", true, nil, mkdir)
	register("delete_file", "Delete a file or symlink, or a directory: an empty one, or with its contents when recursive is true.", true, nil, deleteFile)
	register("rename", "Move or rename a file or directory. Fails if the destination exists unless overwrite is true.", true, nil, rename)
}

func listDirectory(ctx context.Context, t *Toolset, p *ListDirectoryParams) (*ListDirectoryReceipt, error) {
	if p.Path == "" {
		p.Path = "."
	}
	depth := 1
	if p.Depth != nil {
		if *p.Depth < 1 {
			return nil, fail(CodeInvalidInput, "depth must be at least 1, not %d", *p.Depth)
		}
		depth = *p.Depth
	}
	if p.MaxEntries < 0 {
		return nil, fail(CodeInvalidInput, "max_entries must not be negative")
	}
	for _, g := range p.Ignore {
		if !doublestar.ValidatePattern(g) {
			return nil, fail(CodeInvalidPattern, "ignore pattern %q is not a valid glob; check its brackets and braces", g)
		}
	}
	dir, err := t.path("path", p.Path, vfs.AccessRead, followLast)
	if err != nil {
		return nil, err
	}
	tree := t.s.Tree()
	n, ok, err := tree.Lookup(dir)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fail(CodeNotFound, "%s does not exist; list its parent to see what does", dir.Rel())
	case !n.IsDir():
		return nil, fail(CodeNotDirectory, "%s is a %s, not a directory; use read_file or stat", dir.Rel(), n.Kind)
	}
	limit := int(policy.Clamp(int64(p.MaxEntries), t.pol.Caps.MaxEntries))
	r := &ListDirectoryReceipt{Path: dir.Rel(), Entries: []Entry{}}
	room := t.listBudget(r)
	full := false
	base := dir.Depth()
	err = tree.Walk(dir, func(q vfs.Path, n vfs.Node) error {
		if q == dir {
			return nil
		}
		if !t.visible(q) || ignored(p.Ignore, relTo(dir, q), q.Base()) {
			if n.IsDir() {
				return vfs.SkipDir // leave out its contents too
			}
			return nil // only this file: SkipDir on a file skips its siblings
		}
		if limit > 0 && len(r.Entries) == limit {
			r.Truncated = true
			return errStop
		}
		e := entryOf(q, n)
		if !room.take(e) {
			r.Truncated, full = true, true
			return errStop
		}
		r.Entries = append(r.Entries, e)
		if n.IsDir() && q.Depth()-base >= depth {
			return vfs.SkipDir
		}
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	r.view = listingView(dir, r.Entries, r.Truncated)
	r.SummaryText = fmt.Sprintf("Listed %s: %d entries", r.Path, len(r.Entries))
	switch {
	case full:
		r.SummaryText += fmt.Sprintf(" (truncated at %s, the most one result returns; list a subdirectory, lower depth, or add ignore patterns)", sizeWords(t.opts.InlineBytes))
	case r.Truncated:
		r.SummaryText += " (truncated; raise max_entries or list a subdirectory)"
	}
	return r, nil
}

// errStop ends a walk early.
var errStop = fmt.Errorf("stop")

func relTo(dir, p vfs.Path) string {
	if dir.IsRoot() {
		return string(p)
	}
	return strings.TrimPrefix(string(p), string(dir)+"/")
}

func ignored(globs []string, rel, name string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, rel); ok {
			return true
		}
		if ok, _ := doublestar.Match(g, name); ok {
			return true
		}
	}
	return false
}

// listingView renders entries as "[DIR] path/" and "[FILE] path (size)".
func listingView(dir vfs.Path, entries []Entry, truncated bool) string {
	var b strings.Builder
	if len(entries) == 0 {
		fmt.Fprintf(&b, "%s is empty\n", dir.Rel())
	}
	for _, e := range entries {
		switch e.Kind {
		case "dir":
			fmt.Fprintf(&b, "[DIR] %s/\n", e.Path)
		case "symlink":
			fmt.Fprintf(&b, "[LINK] %s -> %s\n", e.Path, e.Target)
		default:
			fmt.Fprintf(&b, "[FILE] %s (%s)\n", e.Path, sizeWords(e.SizeBytes))
		}
	}
	if truncated {
		b.WriteString("[... more entries; raise max_entries or list a subdirectory]\n")
	}
	return b.String()
}

func statTool(ctx context.Context, t *Toolset, p *StatParams) (*StatReceipt, error) {
	path, err := t.path("path", p.Path, vfs.AccessRead, noFollowLast)
	if err != nil {
		return nil, err
	}
	n, err := t.s.Stat(ctx, path)
	if err != nil {
		return nil, err
	}
	r := &StatReceipt{Entry: entryOf(path, n), Mode: fmt.Sprintf("%04o", uint32(n.Mode.Perm())), Version: n.Version,
		CreatedAt: n.CreatedAt().Format(time.RFC3339Nano), UpdatedAt: n.UpdatedAt().Format(time.RFC3339Nano)}
	if n.IsFile() {
		r.Encoding = n.Encoding.String()
	}
	r.SummaryText = fmt.Sprintf("%s: %s, %s, version %d", r.Path, n.Kind, sizeWords(n.Size), n.Version)
	return r, nil
}

func exists(ctx context.Context, t *Toolset, p *StatParams) (*ExistsReceipt, error) {
	path, err := t.path("path", p.Path, vfs.AccessRead, noFollowLast)
	if err != nil {
		return nil, err
	}
	r := &ExistsReceipt{Path: path.Rel()}
	n, ok, err := t.s.Tree().Lookup(path)
	if err != nil {
		return nil, err // unreadable is not "does not exist"
	}
	if ok {
		r.Exists, r.Kind = true, n.Kind.String()
		r.SummaryText = fmt.Sprintf("%s exists (%s)", r.Path, n.Kind)
	} else {
		r.SummaryText = r.Path + " does not exist"
	}
	return r, nil
}

func mkdir(ctx context.Context, t *Toolset, p *MkdirParams) (*MkdirReceipt, error) {
	path, err := t.path("path", p.Path, vfs.AccessWrite, noFollowLast)
	if err != nil {
		return nil, err
	}
	parents := p.Parents == nil || *p.Parents
	before, existed, err := t.s.Tree().Lookup(path)
	if err != nil {
		return nil, err
	}
	if _, err := t.s.Mkdir(ctx, path, vfs.MkdirOptions{Parents: parents}); err != nil {
		return nil, err
	}
	r := &MkdirReceipt{Path: path.Rel(), Created: !(existed && before.IsDir())}
	r.SummaryText = "Created directory " + r.Path
	if !r.Created {
		r.SummaryText = r.Path + " already exists"
	}
	return r, nil
}

func deleteFile(ctx context.Context, t *Toolset, p *DeleteFileParams) (*DeleteFileReceipt, error) {
	path, err := t.path("path", p.Path, vfs.AccessWrite, noFollowLast)
	if err != nil {
		return nil, err
	}
	if path.IsRoot() {
		return nil, fail(CodeForbidden, "the workspace root cannot be deleted; delete its entries instead")
	}
	tree := t.s.Tree()
	n, ok, err := tree.Lookup(path)
	if err != nil {
		return nil, err
	}
	r := &DeleteFileReceipt{Path: path.Rel()}
	if !ok {
		if p.AllowMissing {
			r.SummaryText = r.Path + " did not exist"
			return r, nil
		}
		return nil, fail(CodeNotFound, "%s does not exist; list its parent directory to see what exists", r.Path)
	}
	has, err := tree.HasChildren(path)
	if err != nil {
		return nil, err
	}
	if n.IsDir() && has && !p.Recursive {
		return nil, fail(CodeDirectoryNotEmpty, "%s is a directory that is not empty; pass recursive=true to delete it with its contents", r.Path)
	}
	if err := tree.Walk(path, func(vfs.Path, vfs.Node) error { r.Removed++; return nil }); err != nil {
		return nil, err // the count is part of the receipt: never a short one
	}
	if err := t.s.Remove(ctx, path, vfs.RemoveOptions{Recursive: p.Recursive}); err != nil {
		return nil, err
	}
	r.Deleted, r.Kind = true, n.Kind.String()
	r.SummaryText = fmt.Sprintf("Deleted %s %s", n.Kind, r.Path)
	switch {
	case r.Removed == 2:
		r.SummaryText += " and the 1 entry in it"
	case r.Removed > 2:
		r.SummaryText += fmt.Sprintf(" and the %d entries in it", r.Removed-1)
	}
	return r, nil
}

func rename(ctx context.Context, t *Toolset, p *RenameParams) (*RenameReceipt, error) {
	from, err := t.path("from", p.From, vfs.AccessWrite, noFollowLast)
	if err != nil {
		return nil, err
	}
	to, err := t.path("to", p.To, vfs.AccessWrite, noFollowLast)
	if err != nil {
		return nil, err
	}
	if from.IsRoot() || to.IsRoot() {
		return nil, fail(CodeForbidden, "the workspace root cannot be renamed or replaced")
	}
	if to.HasPrefix(from) && to != from {
		return nil, fail(CodeInvalidInput, "cannot move %s into itself (%s)", from.Rel(), to.Rel())
	}
	n, err := t.s.Stat(ctx, from)
	if err != nil {
		return nil, err
	}
	_, exists, err := t.s.Tree().Lookup(to)
	if err != nil {
		return nil, err
	}
	if exists && !p.Overwrite && from != to {
		return nil, fail(CodeAlreadyExists, "%s already exists; pass overwrite=true to replace it", to.Rel())
	}
	if err := t.s.Rename(ctx, from, to, vfs.RenameOptions{NoReplace: !p.Overwrite, CreateParents: true}); err != nil {
		return nil, err
	}
	r := &RenameReceipt{From: from.Rel(), To: to.Rel(), Kind: n.Kind.String()}
	r.SummaryText = fmt.Sprintf("Renamed %s to %s", r.From, r.To)
	return r, nil
}
