package patch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"unicode/utf8"

	"github.com/vfsd/vfsd/internal/textdiff"
)

// Files is read access to the tree the patch applies to. Paths are exactly
// as written in the patch, except that Plan also asks for the parent
// directories of the files it creates, by their cleaned relative paths
// ("src" for "./src/new.go"), to learn whether they are directories.
type Files interface {
	// ReadFile returns the file's content. A missing file gives an error
	// matching fs.ErrNotExist; a directory gives an error matching
	// ErrIsDir.
	ReadFile(path string) ([]byte, error)
}

// Result is what applying a patch changes, computed without changing it.
type Result struct {
	// Changes has one Change per hunk, in patch order. Applying them in
	// that order reproduces what the patch does; a later change to a path
	// an earlier one touched starts from that earlier change's result.
	Changes []Change
}

// Change is one hunk's effect on the tree.
type Change struct {
	// Op is the hunk's operation.
	Op Op
	// Path is the file the hunk names, as written in the patch.
	Path string
	// MoveTo is where an update moves the file (as written), or "": the
	// caller writes New there, replacing any file, then removes Path.
	MoveTo string
	// Old is the file's content before the change; nil when an add
	// creates a file that did not exist.
	Old []byte
	// New is the file's content after the change; nil for a delete.
	New []byte
	// Diff is the unified diff from Old to New, labelled a/Path and
	// b/Path (b/MoveTo for a move, /dev/null for a missing side); "" when
	// the content is unchanged.
	Diff string
}

// Plan computes every file's new content without changing anything. It is
// all-or-nothing: either every hunk applies, and the Result lists all
// changes, or a *RejectError says which hunk failed.
//
// Hunks apply in order, each seeing what the earlier ones did (an update
// after an add of the same path updates the added text), as Codex applies
// them one after the other. As in Codex:
//   - an add replaces a file that already exists, and creates its parent
//     directories as needed; a directory or a file beneath a file is
//     rejected;
//   - a delete needs an existing file, not a directory; its directory
//     stays;
//   - an update needs an existing UTF-8 text file (ErrBinary otherwise);
//     a move replaces a file at the destination; every updated file ends
//     with a line ending;
//   - a chunk's context and lines are found as textmatch.Seek finds them,
//     from where the previous chunk ended; a chunk without old lines is
//     appended at the end of the file.
//
// Updates keep each line's ending (LF or CRLF) and give inserted lines the
// ending of the file's first line, as Codex does when it preserves line
// endings; context lines stay exactly as they are in the file. An update
// moved to its own path is an update in place (Codex would delete it).
func Plan(p *Patch, files Files) (*Result, error) {
	if p == nil || len(p.Hunks) == 0 {
		return nil, &RejectError{Msg: "No files were modified: the patch has no file operations", Err: ErrEmpty}
	}
	t := newTree(files)
	res := &Result{Changes: make([]Change, 0, len(p.Hunks))}
	for i := range p.Hunks {
		h := &p.Hunks[i]
		if h.Path == "" {
			return nil, &RejectError{Line: h.Line, Msg: "the hunk has no path", Err: fs.ErrInvalid}
		}
		var c Change
		var err error
		switch h.Op {
		case OpAdd:
			c, err = t.add(h)
		case OpDelete:
			c, err = t.delete(h)
		case OpUpdate:
			c, err = t.update(h)
		default:
			err = &RejectError{Path: h.Path, Line: h.Line, Msg: fmt.Sprintf("unknown operation %q", h.Op), Err: fs.ErrInvalid}
		}
		if err != nil {
			return nil, err
		}
		res.Changes = append(res.Changes, c)
	}
	return res, nil
}

func (t *tree) add(h *Hunk) (Change, error) {
	old, err := t.prepareWrite(h.Path)
	if err != nil {
		return Change{}, writeReject(h, h.Path, "Failed to write file", err)
	}
	content := []byte(h.Contents)
	t.write(h.Path, content)
	return Change{Op: OpAdd, Path: h.Path, Old: old, New: content, Diff: diff(h.Path, h.Path, old, content, old != nil, true)}, nil
}

func (t *tree) delete(h *Hunk) (Change, error) {
	old, err := t.read(h.Path)
	if err != nil {
		return Change{}, readReject(h, "Failed to delete file", err)
	}
	if old == nil {
		old = []byte{}
	}
	t.remove(h.Path)
	return Change{Op: OpDelete, Path: h.Path, Old: old, Diff: diff(h.Path, h.Path, old, nil, true, false)}, nil
}

func (t *tree) update(h *Hunk) (Change, error) {
	old, err := t.read(h.Path)
	if err != nil {
		return Change{}, readReject(h, "Failed to read file to update", err)
	}
	if old == nil {
		old = []byte{}
	}
	if isBinary(old) {
		return Change{}, &RejectError{Path: h.Path, Line: h.Line, Err: ErrBinary,
			Msg: "binary file: the file is not UTF-8 text, so it cannot be patched; replace it whole with '*** Delete File:' and '*** Add File:' if it must change"}
	}
	if len(h.Chunks) == 0 {
		return Change{}, &RejectError{Path: h.Path, Line: h.Line, Err: fs.ErrInvalid,
			Msg: fmt.Sprintf("Update file hunk for path '%s' is empty", h.Path)}
	}
	text, cerr := updateContent(string(old), h.Chunks, h.Path)
	if cerr != nil {
		return Change{}, &RejectError{Path: h.Path, Line: h.Chunks[cerr.chunk].Line, Msg: cerr.msg, Err: ErrNoMatch}
	}
	content := []byte(text)
	dest := h.Path
	if h.MoveTo != "" && key(h.MoveTo) != key(h.Path) {
		dest = h.MoveTo
		if _, err := t.prepareWrite(dest); err != nil {
			return Change{}, writeReject(h, dest, "Failed to move file to", err)
		}
		t.write(dest, content)
		t.remove(h.Path)
	} else {
		t.write(h.Path, content)
	}
	c := Change{Op: OpUpdate, Path: h.Path, Old: old, New: content, Diff: diff(h.Path, dest, old, content, true, true)}
	if dest != h.Path {
		c.MoveTo = dest
	}
	return c, nil
}

// readReject explains why the file a hunk needs could not be read.
func readReject(h *Hunk, what string, err error) *RejectError {
	r := &RejectError{Path: h.Path, Line: h.Line, Err: err}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Msg = fmt.Sprintf("%s %s: the file does not exist", what, h.Path)
		if h.Op == OpUpdate {
			r.Msg += fmt.Sprintf("; check the path, or use '*** Add File: %s' to create it", h.Path)
		}
	case errors.Is(err, ErrIsDir):
		r.Msg = fmt.Sprintf("%s %s: it is a directory; hunks name files", what, h.Path)
	default:
		r.Msg = fmt.Sprintf("%s %s: %v", what, h.Path, err)
	}
	return r
}

// writeReject explains why a file cannot be written at p.
func writeReject(h *Hunk, p, what string, err error) *RejectError {
	r := &RejectError{Path: p, Line: h.Line, Err: err}
	switch {
	case errors.Is(err, ErrIsDir):
		r.Msg = fmt.Sprintf("%s %s: it is a directory", what, p)
	case errors.Is(err, ErrNotDir):
		r.Msg = fmt.Sprintf("%s %s: %v, so it cannot hold other files", what, p, err)
	default:
		r.Msg = fmt.Sprintf("%s %s: %v", what, p, err)
	}
	return r
}

// diff renders the change of a file as a unified diff; a side that does
// not exist is /dev/null. Binary content is only said to differ.
func diff(oldPath, newPath string, old, new []byte, oldExists, newExists bool) string {
	oldName, newName := "a/"+oldPath, "b/"+newPath
	if !oldExists {
		oldName = textdiff.NoFile
	}
	if !newExists {
		newName = textdiff.NoFile
	}
	if oldExists == newExists && bytes.Equal(old, new) {
		return ""
	}
	if isBinary(old) || isBinary(new) {
		return fmt.Sprintf("Binary files %s and %s differ\n", textdiff.QuotePath(oldName), textdiff.QuotePath(newName))
	}
	return textdiff.Unified(oldName, newName, string(old), string(new))
}

// isBinary reports whether content is not text: it holds a NUL byte or is
// not valid UTF-8 (the rule vfs.DetectEncoding applies).
func isBinary(content []byte) bool {
	return bytes.IndexByte(content, 0) >= 0 || !utf8.Valid(content)
}
