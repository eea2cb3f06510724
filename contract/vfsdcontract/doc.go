// Package vfsdcontract is vfsd's own contract, "vfsd", the default: the
// tools of package tools exactly as they are (names, parameters, receipts,
// statuses and error codes), with titles and MCP annotations, and the
// consolidated "filesystem" tool. Calls go to the session's
// tools.Toolset; the result's Body is the receipt JSON the tool route has
// always returned.
package vfsdcontract
