package tools

import (
	"bytes"
	"encoding/json"
)

// Receipt is what every tool's receipt starts with.
type Receipt struct {
	Status    Status `json:"status" jsonschema:"ok, or the failure's class"`
	ErrorCode Code   `json:"error_code,omitempty" jsonschema:"stable machine-readable code of a failure"`
	// ErrorNumber is the number of the X07 error code (60001–60020) that
	// means the same as ErrorCode, under policies that ask for numeric
	// codes (Code.Number); absent where X07's table has no such code.
	ErrorNumber int    `json:"error_number,omitempty" jsonschema:"the error code as a number (60001-60020), under policies that report numbers"`
	SummaryText string `json:"summary_text" jsonschema:"one line saying what happened, or what was wrong and what to do"`
}

// base returns the receipt itself; every receipt type embeds Receipt.
func (r *Receipt) base() *Receipt { return r }

// receipt is implemented by every tool's receipt type.
type receipt interface {
	base() *Receipt
	// text renders the receipt for a model: file text, a listing, a diff,
	// or the summary.
	text() string
}

// Details are the extra fields some failures carry.
type Details struct {
	Path           string  `json:"path,omitempty"`
	Line           int     `json:"line,omitempty" jsonschema:"1-based line of the patch or file the failure is about"`
	CandidateLines []int   `json:"candidate_lines,omitempty" jsonschema:"1-based start lines of every match, when a match was ambiguous"`
	Closest        *Region `json:"closest,omitempty" jsonschema:"the region of the file most like the text that was not found"`
	Found          int64   `json:"found,omitempty" jsonschema:"the size or count that exceeded a limit"`
	Limit          int64   `json:"limit,omitempty" jsonschema:"the limit that was exceeded"`
	EditIndex      *int    `json:"edit_index,omitempty" jsonschema:"0-based index of the edit that failed, in a multi-edit"`
}

// Region is a span of lines of a file.
type Region struct {
	StartLine  int     `json:"start_line"`
	EndLine    int     `json:"end_line"`
	Text       string  `json:"text"`
	Similarity float64 `json:"similarity"`
}

// FailureReceipt is the receipt of a failed call.
type FailureReceipt struct {
	Receipt
	Details
}

func (r *FailureReceipt) text() string { return r.SummaryText }

// Response is the outcome of one tool call.
type Response struct {
	// Tool is the name the call used.
	Tool string
	// Receipt is the receipt value: the tool's receipt type on success, a
	// *FailureReceipt otherwise.
	Receipt any
	// Text renders the receipt for a model.
	Text string
}

// Status returns the call's status.
func (r *Response) Status() Status { return r.Receipt.(receipt).base().Status }

// OK reports whether the call succeeded.
func (r *Response) OK() bool { return r.Status() == StatusOK }

// JSON returns the receipt's JSON: deterministic, without HTML escaping.
func (r *Response) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Receipt); err != nil {
		// Receipts are plain data; this cannot happen.
		return []byte(`{"status":"error","error_code":"error","summary_text":"receipt did not encode"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
