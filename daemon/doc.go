// Package daemon is vfsd's server: it owns a data directory (a local
// content store, the sessions' state, their metadata and the admin token),
// and serves the HTTP/JSON API under /v1 — sessions, tools, snapshots,
// apply-to-host, blobs, FUSE mounts, event streams, health and Prometheus
// metrics — on a Unix socket (mode 0600, full access) and, when asked, on
// TCP behind bearer tokens.
//
// # Data directory
//
//	store/        content-addressed blobs and snapshot records (snapshot.LocalStore)
//	sessions/     each session's journal and upper directory (snapshot.Repo)
//	meta/ID.json  each session's metadata: policy, profile, mounts, expiry,
//	              base and import snapshots, token hash, FUSE mounts
//	import*.cache the host import caches (hostmount)
//	token         the admin token (0600), generated on first start with TCP
//	ui.key        the key naming the review page's hosts (0600; uiauth.go)
//	lock          held while a daemon serves the directory
//
// Sessions and their metadata survive a restart, a crash included: the Repo
// recovers every session's journal, and metadata is written atomically
// (renameio) before the session it describes is created. A metadata file
// without a session (a creation that never finished) is dropped at start; a
// session without metadata is adopted with the default policy.
//
// # Authorization
//
// A request on the Unix socket may do everything; so may one on TCP with
// the admin token. A session's own token (returned when the session is
// created, kept only as a hash) reaches that session's endpoints —
// /v1/sessions/{id}/... — and the blob endpoints, and nothing else: not
// other sessions, not the global snapshot and garbage-collection endpoints,
// and not the two endpoints with effects on the host (apply and FUSE mount),
// which need the admin. Refusals are 403 forbidden; a missing or unknown
// token is 401 unauthorized.
//
// # Hooks
//
// Toolset returns a session's tools for in-process callers.
//
// # MCP
//
// /v1/sessions/{id}/mcp serves the session's tools over MCP's streamable
// HTTP transport (mcpserver.HTTPHandler), behind the session's
// authorization: the tools of the session's profile, or of ?profile=NAME.
package daemon
