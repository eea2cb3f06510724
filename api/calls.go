package api

import (
	"encoding/json"
	"time"
)

// Call is one tool call in a session's call log (GET
// /v1/sessions/{id}/calls): every call through the HTTP API or MCP, under
// whatever contract, in the order the calls finished.
type Call struct {
	// N numbers the session's calls from 1, in order; it never repeats
	// and never goes back, across restarts too.
	N    uint64    `json:"n"`
	Time time.Time `json:"time"`
	// DurationMs is how long the call ran.
	DurationMs float64 `json:"duration_ms"`
	// Contract and Tool are the call's contract and tool name.
	Contract string `json:"contract"`
	Tool     string `json:"tool"`
	// Transport is how the call came: "http" or "mcp".
	Transport string `json:"transport"`
	// Params are the call's parameters, when at most CallInlineBytes;
	// larger ones are in the blob ParamsRef (GET /v1/blobs/{ref}).
	Params    json.RawMessage `json:"params,omitempty"`
	ParamsRef string          `json:"params_ref,omitempty"`
	// Result is the result's body (the receipt, for the vfsd contract),
	// when at most CallInlineBytes; larger ones are in the blob ResultRef.
	Result    json.RawMessage `json:"result,omitempty"`
	ResultRef string          `json:"result_ref,omitempty"`
	// Status is the result's status word or error code; IsError whether
	// the call failed.
	Status  string `json:"status"`
	IsError bool   `json:"is_error,omitempty"`
	// Summary is the start of the result's text for a model.
	Summary string `json:"summary,omitempty"`
	// SeqBefore and Seq are the session's journal position (Session.Seq)
	// before and after the call: a call that changed nothing has them
	// equal, unless other writers (FUSE, concurrent calls) changed the
	// session meanwhile.
	SeqBefore uint64 `json:"seq_before"`
	Seq       uint64 `json:"seq"`
}

// CallInlineBytes is the size above which a call log record keeps params
// or a result as a blob reference rather than inline.
const CallInlineBytes = 16 << 10

// CallList answers GET /v1/sessions/{id}/calls: the calls with N greater
// than ?since= (default 0), oldest first, at most ?limit= of them (default
// and maximum 1000). Next is the since= of the next page, 0 when this one
// is the last. Oldest is the lowest N the log still holds (older calls
// were dropped to bound its size).
type CallList struct {
	Calls  []Call `json:"calls"`
	Next   uint64 `json:"next,omitempty"`
	Oldest uint64 `json:"oldest,omitempty"`
}
