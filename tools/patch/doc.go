// Package patch parses and plans V4A patches, the format of OpenAI Codex's
// apply_patch tool:
//
//	*** Begin Patch
//	*** Add File: path/new.txt
//	+line one
//	*** Update File: src/app.py
//	*** Move to: src/main.py
//	@@ def greet():
//	-    print("hi")
//	+    print("hello")
//	*** Delete File: old.txt
//	*** End Patch
//
// Parse turns the text into a Patch; Plan computes every file's new content
// against a read-only view of the tree (Files) without changing anything.
// The package does no I/O of its own: the caller reads through Files and
// applies the Result, all of it or none.
//
// The semantics follow Codex's apply-patch crate (parser.rs, lib.rs,
// seek_sequence.rs, text_file.rs): the same lenient parsing, the same
// search for context lines (internal/textmatch: exact, then ignoring
// trailing white space, then all surrounding white space, then typographic
// punctuation), the same placement of replacements, and hunks that see the
// effects of the hunks before them. Where this package differs from Codex
// it is because a failing patch changes nothing here (Codex leaves the
// hunks before the failure applied), or because Codex's result would be
// surprising; each difference is documented where it is implemented.
package patch
