// Package aos is the AOS contract: the host-session repo I/O effects of
// ../shared/seeds/000_4807e654a7c6d649.txt (host.fs.*) and, under the same
// shapes, 001_3f910a6a39eb5600.txt (process.fs.*), word for word.
//
// Effects: host.fs.read_file, write_file, edit_file, apply_patch, grep,
// glob, and the optional stat, exists, list_dir. Call also answers every
// effect as process.fs.<name> and as the SDK tool name <name> of the
// document's Tool Mapping (read_file -> host.fs.read_file); MCP tool
// names may contain dots (SEP-986), so Tools lists the host.fs.* names
// verbatim, and Aliases gives the others.
//
// Parameters decode as the AOS effect types do (unknown fields ignored,
// session_id optional and checked against the session the call is bound
// to; see params.go). Receipts are the document's (receipts.go): a status
// from the effect's list, the effect's fields, error_code on failure, and
// payload variants inline_text/inline_bytes/blob by output_mode. Each
// effect runs on vfsd's engine: read_file, write_file and apply_patch
// through vfsd's own tools, grep and glob on tools/search, edit_file on
// tools/edit plus the in-line fuzzy stage of fuzzy.go.
//
// The document's capability fields decode into a vfsd policy
// (DecodePolicy, strict); receipts are journaled for replay (journal.go).
package aos
