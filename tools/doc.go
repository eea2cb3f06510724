// Package tools is the agent-facing face of a session: the file tools an
// agent calls (read_file, write_file, edit_file, apply_patch, grep, glob,
// list_directory, stat, exists, mkdir, delete_file, rename), their JSON
// schemas, and the receipts they return.
//
// A Toolset is bound to one session. Every call validates its parameters
// first, checks the session it names, the policy (allowed operations, read
// and write roots, hidden and non-ASCII paths, symlinks) and the caps, and
// returns a receipt: {status, error_code, summary_text, ...}. Failures are
// receipts, never panics, and a failed mutating call leaves the session
// exactly as it was. The same session state and parameters give the same
// receipt bytes.
//
// Large outputs leave as blobs in the session's store, referenced by
// blob_ref; write_file takes a blob_ref as content. Profiles render the
// tool list for a model provider (OpenAI, Anthropic, Gemini, a minimal set,
// or one consolidated "filesystem" tool) with a prompt section telling the
// agent how to use the workspace.
package tools
