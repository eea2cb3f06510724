// Package api holds the wire types of the vfsd HTTP/JSON API (under /v1):
// request and response bodies, the error envelope and its stable codes. The
// daemon (package daemon) serves them and the Go client (package client)
// speaks them; docs/api.md documents every endpoint.
//
// The types mirror the engine's (hostmount, snapshot, tools) rather than
// embed them, so that the API changes only when this package does.
package api
