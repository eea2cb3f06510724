// Package posfilesystem is the pos_filesystem contract: prAxIs OS's
// consolidated file tool, as its design document
// (../shared/seeds/003_fc513d739540fa60.txt) specifies it, word for word.
//
// One tool, pos_filesystem, takes an action (read, write, list, delete,
// exists, mkdir) and a path relative to the project root (the session's
// root), with the action's parameters (content, start_line, line_count,
// encoding, max_size_mb, create_dirs). Every call returns the document's
// result object (success, action, path, message, the action's fields, and
// error and error_type on failure); error types are the Python exception
// names the document's implementation raises (FileNotFoundError,
// PermissionError, ValueError, ...).
//
// The path rules are the document's validate_path: symlinks are resolved
// and any path that climbs out of the workspace is "Path traversal
// detected" (ValueError). Reads are streamed: a line range reads the file
// no further than its last line, and a whole read of a file over
// max_size_mb (10 MB by default) fails. Writes, mkdir and delete run
// through vfsd's own tools, under the session's policy.
//
// The contract's default policy denies hidden files; DecodePolicy takes
// the contract's policy fields (hidden_file_access, read_only,
// max_size_mb) with vfsd's own.
package posfilesystem
