// Package tests holds vfsd's end-to-end tests: they build cmd/vfsd once
// (with the race detector when the tests run with it) and drive real
// daemons, through the CLI, the HTTP API, MCP and the browser UI, and
// real mounts, sandboxes and remotes. Among them: recovery after a
// daemon or process is killed (crash_test.go, daemon_crash_test.go), a
// model-based test that checks the engine against an in-memory model of
// POSIX (model_test.go), attacks on the mounts by a hostile program
// (hostile_mount_test.go), `vfsd run`'s sandbox (run_*_test.go, with the
// probe in sandboxprobe) and remotes shared by daemons (remote_*_test.go).
// The per-contract conformance suites are in tests/contracts. The package
// has only tests; this file gives it its documentation.
package tests
