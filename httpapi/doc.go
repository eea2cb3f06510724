// Package httpapi serves a daemon's HTTP/JSON API (docs/api.md): the route
// table under /v1 — sessions, tools, history, snapshots, diffs, the host
// (apply, mounts), blobs, event streams, MCP — with health and Prometheus
// metrics, and the review page (package ui) under /ui/. It serves on the
// daemon's Unix socket (mode 0600, full access) and, when asked, on TCP
// behind bearer tokens.
//
// The package is the daemon's HTTP seam and nothing more: each handler
// reads its request (path, query, body), calls one typed method of
// daemon.Daemon with the caller attached to the context
// (daemon.WithCaller), and writes the answer or the error envelope. What
// a session is, and what may be done to it, is the daemon's.
//
// # Authorization
//
// A request on the Unix socket may do everything; so may one on TCP with
// the admin token. A session's own token (returned when the session is
// created, kept only as a hash) reaches that session's endpoints —
// /v1/sessions/{id}/... — and the blob endpoints, and nothing else: not
// other sessions, not the global snapshot and garbage-collection endpoints,
// and not the two endpoints with effects on the host (apply and mount),
// which need the admin. Each route names its scope in the route table
// (routes.go). Refusals are 403 forbidden; a missing or unknown token is
// 401 unauthorized. The review page's cookie (package ui) authenticates
// the page's own requests as its login's principal.
//
// # Limits
//
// limits.go bounds what a client can make the daemon hold: header and body
// timeouts, idle connections, header and body sizes, and connections per
// listener.
//
// # MCP
//
// /v1/sessions/{id}/mcp serves the session's tools over MCP's streamable
// HTTP transport (mcpserver.HTTPHandler), behind the session's
// authorization: the tools of the session's profile, or of ?profile=NAME.
package httpapi
