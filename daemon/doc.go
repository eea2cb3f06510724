// Package daemon is vfsd's service: it owns a data directory (a local
// content store, the sessions' state, their metadata and the admin token)
// and offers typed methods over it — CreateSession, ForkSession,
// CallTool, Snapshot, Rewind, Rebase, Apply, Mount, Subscribe, Push, ... —
// taking and returning the wire types of package api. It has no HTTP:
// package httpapi serves these methods as the HTTP/JSON API, and package
// ui the review page through that API.
//
// # Data directory
//
//	store/        content-addressed blobs and snapshot records (snapshot.LocalStore)
//	sessions/     each session's journal and upper directory (snapshot.Repo)
//	meta/ID.json  each session's metadata: policy, profile, mounts, expiry,
//	              base and import snapshots, token hash, FUSE mounts
//	import*.cache the host import caches (hostmount)
//	token         the admin token (0600), generated on first start with TCP
//	ui.key        the key naming the review page's hosts (0600; package ui)
//	lock          held while a daemon serves the directory
//
// Sessions and their metadata survive a restart, a crash included: the Repo
// recovers every session's journal, and metadata is written atomically
// (renameio) before the session it describes is created. A metadata file
// without a session (a creation that never finished) is dropped at start; a
// session without metadata is adopted with the default policy.
//
// # Callers
//
// A call acts for a Caller (WithCaller): the admin, or one session, whose
// token reaches that session only. Authenticate tells a token's caller.
// The methods trust that the caller may reach the session they name — the
// API checks each route's scope — and use the caller where the answer
// depends on who asks: which snapshots a session resolves, which blobs it
// reads, what a fork by a session may ask for. A call without a Caller is
// the admin's. Errors are *api.Error values with the API's stable codes,
// or errors APIError classifies.
//
// # Hooks
//
// Toolset returns a session's tools for in-process callers; MCPServer a
// session's MCP server, which httpapi serves over streamable HTTP.
package daemon
