package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// sizeWords renders a byte count for people: "512 bytes", "1.5 KiB".
func sizeWords(n int64) string {
	const unit = 1024
	if n < unit {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeMsg says that something is larger than a limit.
func sizeMsg(what string, n, limit int64) string {
	return fmt.Sprintf("%s is %s (%d bytes), over the limit of %d bytes", what, sizeWords(n), n, limit)
}

// Ceilings that hold under every policy, even one without caps (aos): the
// "adapter/runtime safety behaviour" the policy documents leave room for.
// A policy cap that is lower wins.
const (
	// MaxEditBytes bounds the text edit_file reads and the text it builds.
	// An edit holds the old text, its LF form and the new text at once
	// (and the diff's working set for the changed region), about four
	// times the file: 64 MiB keeps one call near 256 MiB, so a few
	// concurrent calls fit a small daemon. Larger files are written with
	// write_file (streamed) instead.
	MaxEditBytes = 64 << 20
	// MaxEditReplacements bounds the replacements of one edit_file call:
	// each costs about 60 bytes of bookkeeping (offsets, lines, spans)
	// before the result is built.
	MaxEditReplacements = 1 << 20
	// MaxReadWindow bounds the bytes one read_file returns: the daemon's
	// default limit on one uploaded blob (1 GiB). Past it a read is a
	// truncated window; page with offset_bytes.
	MaxReadWindow = 1 << 30
	// MaxLineScanBytes bounds how far a line-mode read_file scans a file
	// for its line window and its total line count; past it line mode
	// refuses (too_large) and total_lines is not reported. Byte ranges
	// (offset_bytes) reach anywhere.
	MaxLineScanBytes = 256 << 20
	// grepLineBytes clips each line grep reports, like rg --max-columns.
	grepLineBytes = 1000
)

// summaryReserve is the room a list receipt keeps for its summary_text and
// truncation notes when it fills the inline limit.
const summaryReserve = 1 << 10

// jsonSize returns the length of v's JSON as Response.JSON encodes it.
func jsonSize(v any) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0
	}
	return buf.Len() - 1 // the encoder's newline
}

// budget counts down the inline limit as a list receipt grows, so that a
// list stops at the last item that fits: the receipt's JSON (and its text,
// which says the same) stays under the limit however many results there
// are.
type budget struct{ left int }

// listBudget starts a budget for receipt r, whose lists are still empty.
func (t *Toolset) listBudget(r any) *budget {
	return &budget{left: int(t.opts.InlineBytes) - jsonSize(r) - summaryReserve}
}

// take reports whether item fits, and counts it if so (with its comma).
func (b *budget) take(item any) bool {
	n := jsonSize(item) + 1
	if n > b.left {
		b.left = 0
		return false
	}
	b.left -= n
	return true
}

// clipText cuts s to at most n bytes at a UTF-8 character boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
