package aos

// The receipts, field for field as the documents give them (000 §"Minimal
// Contract Shape"; 001 gives a subset of the same fields). A field the
// document marks optional ("?") is left out when it has no value, as the
// AOS effect types do; status comes first.

// Output is a payload variant: exactly one of inline_text, inline_bytes
// or blob is set (000: "inline_text { text }", "inline_bytes { bytes }",
// "blob { blob_ref, size_bytes, preview_bytes? }").
type Output struct {
	InlineText  *InlineText  `json:"inline_text,omitempty"`
	InlineBytes *InlineBytes `json:"inline_bytes,omitempty"`
	Blob        *Blob        `json:"blob,omitempty"`
}

// InlineText is inline UTF-8 text.
type InlineText struct {
	Text string `json:"text"`
}

// InlineBytes is inline bytes, base64 in JSON.
type InlineBytes struct {
	Bytes []byte `json:"bytes"`
}

// Blob references a payload stored in the session's content-addressed
// store; blob_ref is usable as write_file content and as an apply_patch
// patch.
type Blob struct {
	BlobRef      string `json:"blob_ref"`
	SizeBytes    int64  `json:"size_bytes"`
	PreviewBytes []byte `json:"preview_bytes,omitempty"`
}

// ReadFileReceipt is host.fs.read_file's receipt.
type ReadFileReceipt struct {
	Status    string  `json:"status"`
	Content   *Output `json:"content,omitempty"`
	Truncated *bool   `json:"truncated,omitempty"`
	SizeBytes *int64  `json:"size_bytes,omitempty"`
	ErrorCode string  `json:"error_code,omitempty"`
}

// WriteFileReceipt is host.fs.write_file's receipt.
type WriteFileReceipt struct {
	Status       string `json:"status"`
	WrittenBytes *int64 `json:"written_bytes,omitempty"`
	Created      *bool  `json:"created,omitempty"`
	NewMtimeNs   *int64 `json:"new_mtime_ns,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
}

// EditFileReceipt is host.fs.edit_file's receipt.
type EditFileReceipt struct {
	Status       string `json:"status"`
	Replacements *int   `json:"replacements,omitempty"`
	Applied      *bool  `json:"applied,omitempty"`
	SummaryText  string `json:"summary_text,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
}

// PatchOps counts a patch's file operations.
type PatchOps struct {
	Add    int `json:"add"`
	Update int `json:"update"`
	Delete int `json:"delete"`
	Move   int `json:"move"`
}

// ApplyPatchReceipt is host.fs.apply_patch's receipt.
type ApplyPatchReceipt struct {
	Status       string    `json:"status"`
	FilesChanged *int      `json:"files_changed,omitempty"`
	ChangedPaths *[]string `json:"changed_paths,omitempty"`
	Ops          *PatchOps `json:"ops,omitempty"`
	SummaryText  string    `json:"summary_text,omitempty"`
	Errors       []string  `json:"errors,omitempty"`
	ErrorCode    string    `json:"error_code,omitempty"`
}

// GrepReceipt is host.fs.grep's receipt.
type GrepReceipt struct {
	Status      string  `json:"status"`
	Matches     *Output `json:"matches,omitempty"`
	MatchCount  *int    `json:"match_count,omitempty"`
	Truncated   *bool   `json:"truncated,omitempty"`
	ErrorCode   string  `json:"error_code,omitempty"`
	SummaryText string  `json:"summary_text,omitempty"`
}

// GlobReceipt is host.fs.glob's receipt.
type GlobReceipt struct {
	Status      string  `json:"status"`
	Paths       *Output `json:"paths,omitempty"`
	Count       *int    `json:"count,omitempty"`
	Truncated   *bool   `json:"truncated,omitempty"`
	ErrorCode   string  `json:"error_code,omitempty"`
	SummaryText string  `json:"summary_text,omitempty"`
}

// StatReceipt is host.fs.stat's receipt.
type StatReceipt struct {
	Status    string `json:"status"`
	Exists    *bool  `json:"exists,omitempty"`
	IsDir     *bool  `json:"is_dir,omitempty"`
	SizeBytes *int64 `json:"size_bytes,omitempty"`
	MtimeNs   *int64 `json:"mtime_ns,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
}

// ExistsReceipt is host.fs.exists's receipt.
type ExistsReceipt struct {
	Status    string `json:"status"`
	Exists    *bool  `json:"exists,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
}

// ListDirReceipt is host.fs.list_dir's receipt.
type ListDirReceipt struct {
	Status      string  `json:"status"`
	Entries     *Output `json:"entries,omitempty"`
	Count       *int    `json:"count,omitempty"`
	Truncated   *bool   `json:"truncated,omitempty"`
	ErrorCode   string  `json:"error_code,omitempty"`
	SummaryText string  `json:"summary_text,omitempty"`
}

// ErrorReceipt is the receipt of a call that named no known effect, or
// could not be replayed.
type ErrorReceipt struct {
	Status    string `json:"status"`
	ErrorCode string `json:"error_code"`
}

func ptr[T any](v T) *T { return &v }
