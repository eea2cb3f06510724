// Package search implements the agent tools grep and glob over a session:
// Grep searches file contents, Glob lists paths. Both are deterministic —
// the same tree and options give the same result, in the same order — and
// fast: Grep runs ripgrep over the files' content in place (the blob store's
// files, the session's upper files) or, without rg, searches natively with
// Go's regexp; both engines return identical results.
//
// # What is searched
//
// Grep and Glob walk an immutable vfs.Tree (Grep takes the session's tree
// when called; contents are read as they are when searched). One walker
// (walk.go) decides for both:
//
//   - .gitignore files in the tree are obeyed exactly as git obeys them
//     (package internal/ignore): the root's, those of Path's ancestors, and
//     nested ones as the walk descends, negations included. An ignored
//     directory is not entered. NoIgnore turns this off. A .gitignore that
//     cannot be read (gone, or forbidden by the session's policy) counts as
//     absent; the Hidden filter does not stop one from applying.
//   - Hidden, the policy's filter, skips nodes and whole subtrees.
//   - The Path or Base named by the caller is never itself hidden or
//     ignored: the caller named it (and checked it against the policy).
//   - Glob patterns are doublestar patterns (bmatcuk/doublestar): "*" and
//     "?" stay within a segment, "**" spans directories, "{a,b}" and
//     "[a-z]" work as in a shell, and dot files are not special. Grep's
//     filter matches a pattern without '/' against the file name at any
//     depth, as rg -g does ("*.go"), one with '/' against the path relative
//     to Path. Glob always matches against the path relative to Base ("*.go"
//     lists only Base's own Go files; "**/*.go" all of them). A pattern
//     whose {...} groups combine into more than 64 alternatives is refused:
//     doublestar matches them in exponential time.
//   - Symlinks are never followed. Grep does not search them; Glob lists
//     them like files. Glob lists directories only with Dirs.
//   - Grep skips binary files: those the tree marks binary (NUL bytes or
//     invalid UTF-8 when the content was written whole), and those of
//     unknown encoding (written through handles) with a NUL byte in their
//     first 8 KiB. Everything else is searched as text, to the end.
//
// Results come in path order, the order of the tree (vfs.ComparePaths:
// segment by segment, so "a/z" comes before "a-b"), then by line; Glob
// sorts by modification time, newest first, unless asked for path order.
// MaxResults is applied after sorting: Truncated tells that more existed.
// In content mode it counts matching lines, and keeps only the context
// lines within reach of a kept match.
//
// # How lines match
//
// Files are searched line by line, as grep and ripgrep do. A line is the
// text between two '\n' (the last line needs none; an empty file has no
// line, and there is no empty line after a final '\n'). The pattern is RE2
// syntax, validated with Go's parser before any I/O (*PatternError), and
// then rewritten so that it means exactly the same to Go's regexp and to
// ripgrep's Rust regex (pattern.go), with these rules:
//
//   - A pattern never spans lines: '\n' is removed from every class (so
//     [^a] and \s do not match it), "." never matches it even under (?s),
//     and a pattern that needs a literal line break is refused.
//   - ^ and $ (and \A and \z, which are the same thing here) are the start
//     and end of the line. $ also matches before a "\r\n" line end: CRLF
//     files match like LF files. Reported lines drop one trailing "\r".
//   - \w, \d, \s, \b and \B are ASCII, as in RE2 (Rust's are Unicode by
//     default: the rewrite writes them as explicit ASCII classes and
//     (?-u:\b)). Use \pL, \p{Greek} and the like for Unicode classes; they
//     are written out as explicit ranges from Go's Unicode tables, so both
//     engines use the same Unicode version.
//   - Case-insensitive matching uses simple case folding; each folded
//     letter is written as the explicit class of its folding orbit ("k" is
//     [Kk\x{212A}]). FixedStrings quotes the pattern; it is then matched
//     as a literal, regex characters included.
//   - Lines longer than MaxLineBytes (2000 by default) are reported cut at
//     a UTF-8 character boundary at or before that many bytes; they still
//     match on their whole text.
//
// # Engines
//
// The rg engine collects the files to search from the tree (after every
// filter above), maps each to its local file with Session.LocalPath, and
// runs rg with explicit file arguments — no configuration, no ignore or
// hidden-file rules, every file as text, NUL after each file name — in
// batches small enough for ARG_MAX, several processes at once. A local
// file shared by several paths (one blob) is searched once and reported
// for each. Files without a local path are searched natively: empty files
// (which have no line to match) and files of stores without local files.
// The output is parsed, mapped back to session paths and sorted; rg's exit
// status 1 means no match. The native engine reads through the session on
// GOMAXPROCS workers; it looks for the pattern's longest literal with
// bytes.Index and runs the regexp only on lines holding it, which makes it
// about as fast as rg on literal-rich patterns and much slower on others
// (case-insensitive ones in particular).
//
// # RE2 and Rust regex: known differences
//
// The engines agree because the rewrite removes every difference it can;
// those it cannot, and those it removes, are:
//
//   - Perl classes and word boundaries are Unicode in Rust, ASCII in RE2:
//     removed (ASCII everywhere).
//   - Unicode tables and case folding come from different Unicode
//     versions: removed (explicit ranges and orbits from Go's tables).
//   - $ before "\r\n": Rust's never matches there (rg --crlf rewrites it);
//     removed (\r?$ in both).
//   - \A and \z: rg applies them per line; removed (both are line anchors).
//   - Rust refuses a literal "\n", empty classes and surrogate code points,
//     and has class set operations ([a&&b]) and no octal escapes: removed
//     (the pattern is parsed by RE2 and printed in a syntax both read
//     alike; never-matching parts are pruned).
//   - Invalid UTF-8: Go's regexp reads each invalid byte as U+FFFD, which
//     "." and wide classes then match; Rust's Unicode classes never match
//     invalid bytes. Files of unknown encoding (written through handles)
//     with invalid UTF-8 can therefore match differently; files whose
//     content the tree saw whole are binary, hence skipped, when not UTF-8.
//   - Size limits: RE2 refuses repetitions above 1000; rg refuses regexes
//     whose compiled form exceeds its size limit (an error, never a
//     different result).
//   - RE2 has no look-around or backreferences; neither has Rust's regex.
package search
