// Package textdiff renders unified diffs of text, the one format vfsd shows
// people and models for every change: snapshot diffs, edit and patch
// receipts.
package textdiff

import (
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// NoFile is the label of the missing side of an added or deleted file.
const NoFile = "/dev/null"

// Unified returns the unified diff (three lines of context) turning old into
// new, labelled oldName and newName, or "" when they are equal. A side that
// does not end in a newline is marked as diff(1) marks it.
func Unified(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	return udiff.Unified(oldName, newName, old, new)
}

// Counts returns how many lines a unified diff adds and removes.
func Counts(unified string) (added, removed int) {
	for line := range strings.SplitSeq(unified, "\n") {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		case strings.HasPrefix(line, "+"):
			added++
		case strings.HasPrefix(line, "-"):
			removed++
		}
	}
	return added, removed
}
