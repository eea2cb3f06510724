// Package edit is the string-replacement engine behind the edit_file agent
// tool: it applies old_string/new_string edits to a file's content, in
// memory, deterministically, and refuses anything it cannot apply safely.
//
// # Matching
//
// Each edit is located in two stages.
//
//  1. Exact: old_string is searched as a literal byte string ("$", regex
//     characters and backslashes are plain text). Every position where it
//     occurs counts, overlapping ones included: "aa" occurs twice in "aaa"
//     (at bytes 0 and 1), so without ReplaceAll that edit is ambiguous. One
//     position: it is replaced. More than one: ReplaceAll replaces the
//     leftmost non-overlapping occurrences (as strings.ReplaceAll does, so
//     "aa" → "X" turns "aaa" into "Xa", one replacement); otherwise the edit
//     fails with an AmbiguousError listing every position's line.
//
//  2. Line-based (only when the exact search finds nothing), through
//     internal/textmatch: old_string is split into lines (one trailing
//     newline ends the last line rather than adding an empty one) and
//     matched against whole lines of the file under textmatch's passes —
//     exact lines, then trailing white space ignored ("trim_end"), then
//     leading and trailing white space ignored ("trim"), then typographic
//     punctuation folded to ASCII ("unicode_punctuation"). The first pass
//     that finds anything decides; several matches (overlapping ones
//     included) are ambiguous unless ReplaceAll, which then replaces the
//     leftmost non-overlapping ones. The exact-lines pass only finds what the
//     exact search could not when old_string ends with a newline the file
//     lacks at its end. An old_string whose lines are all blank is never
//     matched by lines.
//
// A line-based match covers whole lines. The matched lines' text (up to, not
// including, the last line's line break) is replaced by new_string, with one
// trailing newline removed from new_string when old_string had one too, so
// the matched lines keep their own line break. When the pass ignored leading
// white space (trim, unicode_punctuation), new_string is re-indented first
// (see Reindentation). new_string is otherwise used as given: the
// unicode_punctuation pass does not turn ASCII quotes back into typographic
// ones.
//
// # Deleting
//
// An empty new_string deletes. When what it deletes is whole lines — every
// line-based match, and an exact match that starts at a line start and ends
// at a line end without taking the line break (old_string "b" in
// "a\nb\nc") — the lines are removed entirely: the line break after them
// goes too, or, at the end of a file without a final newline, the one before
// them, so the file still has no final newline. Otherwise the deletion is
// literal (deleting "b" from "abc" leaves "ac").
//
// # Line endings
//
// A "\r\n" pair is one line break; a lone "\r" is ordinary content. Matching
// always works on content, old_string and new_string with every "\r\n"
// replaced by "\n", so an old_string typed with either convention matches a
// file written in either. A file's style is CRLF when it has more "\r\n"
// breaks than bare "\n" ones (majority; a tie, and a file without line
// breaks, count as LF). Only the replaced bytes change: every line break
// outside them is written back exactly as it was, so a file's line endings
// are never converted, and its final newline is never added or dropped by
// the normalisation. The line breaks of the inserted text take the file's
// style: an LF file stays LF even if new_string contains "\r\n", a CRLF file
// gets "\r\n" for every "\n" of new_string. A carriage return directly before
// a "\n" is part of that line break and cannot be matched on its own.
//
// The exact stage is literal about newlines too: replacing "last\n" by
// "LAST" at the end of a file leaves it without a final newline, as the edit
// asked.
//
// # Reindentation
//
// When a trim or unicode_punctuation match is found, let O be the leading
// white space of old_string's first non-blank line and F that of the file
// line it matched. If O == F, new_string is used as is. Otherwise the
// leading white space W of every non-empty line of new_string is rewritten:
//
//   - Tabs for spaces: when one of O and F is k tabs and the other k×n
//     spaces (1 ≤ n ≤ 8), each whole leading unit of O's kind in W (a tab, or
//     n spaces) becomes one unit of F's kind; the rest of W is kept.
//   - Otherwise, if W starts with O, that prefix is replaced by F.
//   - Otherwise W is shifted by the difference in width (in characters)
//     between F and O: when F is wider by d, the part of F that O lacks (when
//     F starts or ends with O) or else F's first d characters are prepended;
//     when F is narrower by d, up to d leading white-space characters are
//     removed.
//
// Empty lines stay empty. The rule preserves new_string's relative
// indentation and maps old_string's first line exactly onto the file's.
//
// # Errors
//
// Every failure is a typed error carrying the 0-based Index of the edit
// that failed, checked in this order: EmptyOldError (old_string is empty),
// NoChangeError (old_string and new_string are equal once "\r\n" is
// normalised), AmbiguousError (several matches without ReplaceAll, with
// the first 100 candidates' start lines), NotFoundError (no match in any
// stage, ReplaceAll or not, with the most similar region of the file, see
// Region), and under ApplyLimited TooManyError and TooLargeError (an edit
// over Limits, refused before its result is built). Apply is all or
// nothing: on any error it returns no result.
package edit
