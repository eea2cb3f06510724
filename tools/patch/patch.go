package patch

// Op is what a hunk does to its file.
type Op string

// The operations of a V4A patch.
const (
	// OpAdd creates the file with the hunk's Contents, replacing a file
	// that already exists at the path.
	OpAdd Op = "add"
	// OpDelete removes an existing file.
	OpDelete Op = "delete"
	// OpUpdate changes an existing file by its Chunks and optionally moves
	// it to MoveTo, replacing a file already there.
	OpUpdate Op = "update"
)

// Patch is a parsed V4A patch: its hunks in the order they appear.
type Patch struct {
	Hunks []Hunk
}

// Hunk is one file operation of a patch: an "*** Add File:", "*** Delete
// File:" or "*** Update File:" section.
type Hunk struct {
	// Op is the operation.
	Op Op
	// Path is the file's path as written in the patch, without surrounding
	// white space.
	Path string
	// MoveTo is the destination of "*** Move to:" (updates only), as
	// written without surrounding white space, or "".
	MoveTo string
	// Contents is the new file's text (adds only): every "+" line without
	// its "+", each ended by "\n".
	Contents string
	// Chunks are the changes of an update, in file order.
	Chunks []Chunk
	// Line is the 1-based line of the hunk's header in the patch text.
	Line int
}

// Chunk is one change of an update hunk: an optional "@@ context" line
// followed by context (" "), removed ("-") and added ("+") lines.
type Chunk struct {
	// Context is the text after "@@ " that positions the chunk (usually a
	// class or function line), or "" for a bare "@@" or none.
	Context string
	// Old are the lines the chunk replaces: its context and removed lines,
	// in order. Empty for a pure addition.
	Old []string
	// New are the lines that replace Old: its context and added lines.
	New []string
	// Unchanged pairs the index in Old and in New of each context line (a
	// line starting with " ", or an empty line). Plan keeps those lines of
	// the file exactly as they are, so a context line that matched only up
	// to white space or punctuation is not rewritten, nor its line ending.
	// Parse fills it; a Chunk built by hand may leave it nil, and then the
	// whole matched region is replaced by New.
	Unchanged [][2]int
	// EOF is set by "*** End of File": Old should end at the end of the
	// file, and is looked for there first.
	EOF bool
	// Line is the 1-based line in the patch text where the chunk starts:
	// its "@@" line, or its first line when it has none.
	Line int
}
