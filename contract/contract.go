// Package contract defines the tool contracts a session can select.
//
// vfsd replaces the tool surfaces of several existing systems, each
// specified in a document (../shared/seeds/). A Contract is one of those
// surfaces, word for word: its tool names, parameter names and shapes,
// result shapes, statuses, error codes and defaults. Every contract is an
// adapter over the same engine: it decodes its own parameters, runs the
// operation against the session (usually through vfsd's own tools, bound
// to the session's policy), and renders the result as its document gives
// it. vfsd's own contract ("vfsd") is the default.
//
// Contracts register themselves with Register from an init function;
// importing contract/all brings every contract in.
package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Default is the contract a session has when it selects none.
const Default = "vfsd"

// Annotations are the MCP tool annotations: hints to a client about what a
// tool does.
type Annotations struct {
	// ReadOnly tools never change the session.
	ReadOnly bool `json:"readOnlyHint"`
	// Destructive tools may delete or overwrite what is there.
	Destructive bool `json:"destructiveHint"`
	// Idempotent tools give the same state when called twice with the same
	// parameters.
	Idempotent bool `json:"idempotentHint"`
}

// Tool describes one tool of a contract.
type Tool struct {
	// Name is the tool's name exactly as the contract's document gives it.
	Name string `json:"name"`
	// Title is a short human-readable name.
	Title string `json:"title,omitempty"`
	// Description tells a model what the tool does.
	Description string `json:"description"`
	// InputSchema is the JSON Schema (an object schema) of the parameters.
	InputSchema json.RawMessage `json:"inputSchema"`
	// Annotations hint at what the tool does.
	Annotations Annotations `json:"annotations"`
}

// Host imports host folders into a session, under the daemon's allow-listed
// roots; contracts whose documents mount host paths (weakincentives'
// HostMount) use it. The daemon gives it only to a SessionInitializer's
// InitSession, of a session the admin created: the host folders imported
// are the admin's choice (its contract options), never a tool caller's.
// It is nil anywhere else, and where no host access is configured.
type Host interface {
	// Import copies hostPath (a directory or file the daemon may read) into
	// the session at mountPath, filtered by include/exclude globs, at most
	// maxBytes in all (0: the daemon's cap). It returns the number of files
	// and bytes imported.
	Import(ctx context.Context, req ImportRequest) (ImportResult, error)
}

// ImportRequest is one host import.
type ImportRequest struct {
	HostPath  string
	MountPath string
	Include   []string
	Exclude   []string
	MaxBytes  int64
	// FollowSymlinks follows host symlinks (within the allowed roots).
	FollowSymlinks bool
	// SkipSymlinks leaves host symlinks out instead of importing them as
	// symlinks, when they are not followed: for documents whose sessions
	// hold files only (weakincentives).
	SkipSymlinks bool
}

// ImportResult is what an import brought in.
type ImportResult struct {
	Files int64
	Bytes int64
}

// Env is what a contract works on: one session and its tools.
type Env struct {
	// SessionID is the session's id.
	SessionID string
	// Session is the session itself.
	Session *vfs.Session
	// Tools are vfsd's own tools bound to the session under its policy.
	Tools *tools.Toolset
	// Policy is the session's policy (Tools.Policy()).
	Policy *policy.Policy
	// Blobs is the session's blob store (large outputs, blob references).
	Blobs vfs.BlobStore
	// Host imports host folders; nil but in the initialisation of a
	// session the admin created on a daemon with allowed roots (see Host).
	Host Host
}

// Result is the outcome of one call, as the contract's document gives it.
type Result struct {
	// Body is the result object exactly as the document shapes it (a
	// receipt, a result struct, an error envelope ...).
	Body json.RawMessage `json:"body"`
	// Text renders the result for a model.
	Text string `json:"text"`
	// Status is the document's status word or error code name on failure
	// (e.g. "ok", "not_found", "FS_ERR_NOT_FOUND"): used for metrics, logs
	// and the Vfsd-Tool-Status header.
	Status string `json:"status"`
	// IsError reports a failed call (MCP's isError).
	IsError bool `json:"is_error"`
}

// Contract is one tool surface.
type Contract interface {
	// Name is the contract's name ("vfsd", "aos", "weakincentives",
	// "pos_filesystem", "x07").
	Name() string
	// Tools lists the contract's tools in the order a model should see
	// them.
	Tools() []Tool
	// Prompt is the contract's instructions for a model (markdown), the
	// prompt section that goes with its tools.
	Prompt() string
	// Call runs one tool. It never panics (implementations run their body
	// through Guard) and never returns a Result without Body: every failure
	// is a result in the document's shape. A failed mutation leaves the
	// session unchanged.
	Call(ctx context.Context, env *Env, tool string, params json.RawMessage) Result
}

// PolicyDecoder is implemented by contracts whose documents name policy
// fields of their own (roots, caps, allowed operations): DecodePolicy
// turns such a policy object into vfsd's policy, strictly (an unknown field
// is an error that names it).
type PolicyDecoder interface {
	DecodePolicy(raw json.RawMessage) (*policy.Policy, error)
}

// PolicyOperations is implemented by contracts whose policies allow
// operations by names of their own: a contract that runs its operations
// itself, not through vfsd's tools, and checks policy.Policy.AllowedOps
// against its own operation names (X07's read_all_v1, ...). A policy of
// such a contract's session may list only those names in AllowedOps
// (CheckPolicy); a contract without it speaks vfsd's tool names.
type PolicyOperations interface {
	// PolicyOperations returns every name AllowedOps may hold under the
	// contract, in the order they are best listed in an error message.
	PolicyOperations() []string
}

var (
	mu        sync.RWMutex
	contracts = map[string]Contract{}
)

// Register adds a contract; it panics on a duplicate name (a programming
// error).
func Register(c Contract) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := contracts[c.Name()]; dup {
		panic(fmt.Sprintf("contract: %q registered twice", c.Name()))
	}
	contracts[c.Name()] = c
}

// Lookup returns the named contract; "" is the default.
func Lookup(name string) (Contract, error) {
	if name == "" {
		name = Default
	}
	mu.RLock()
	defer mu.RUnlock()
	if c, ok := contracts[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("unknown contract %q; use one of %s", name, strings.Join(namesLocked(), ", "))
}

// Names returns the registered contract names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	var names []string
	for n := range contracts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FindTool returns the tool called name in c's list.
func FindTool(c Contract, name string) (Tool, bool) {
	for _, t := range c.Tools() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// HostRoots is implemented by a Host that can list its allow-listed roots:
// absolute host directories, in the order a relative host path is resolved
// against them (weakincentives' HostMount resolves "docs/" against the
// orchestrator's allow-listed roots).
type HostRoots interface {
	Roots() []string
}

// SessionInitializer is implemented by contracts whose documents configure
// a session when it is created (weakincentives' HostMounts). The daemon
// calls InitSession once the session exists, before any tool call, with the
// contract's own creation options (JSON; empty when none were given), and
// again after every reset of the session. An error fails the creation (or
// the reset): the daemon discards the session.
type SessionInitializer interface {
	InitSession(ctx context.Context, env *Env, options json.RawMessage) error
}

// PolicyDefaulter is implemented by contracts whose documents fix limits of
// their own: DefaultPolicy is the policy a session of the contract gets
// when it names none.
type PolicyDefaulter interface {
	DefaultPolicy() *policy.Policy
}

// SnapshotLifetime is implemented by contracts whose documents say what
// becomes of a session's snapshots when the session ends.
type SnapshotLifetime interface {
	// PurgeSnapshotsOnClose reports whether closing a session deletes the
	// snapshots taken of it by default (DELETE /v1/sessions/{id} without
	// ?purge= behaves as ?purge=true).
	PurgeSnapshotsOnClose() bool
}

// RootDirectory is implemented by contracts whose documents give every
// session a directory on disk that holds its files (weakincentives'
// root_path: "a per-session temporary directory on disk ... so other
// components can mount it"). The daemon makes one per session under the
// operating system's temporary directory, mounts the session there (FUSE)
// or, where it cannot mount, keeps a copy there that it refreshes whenever
// the state is read, hands its path to StateReporter.State, and removes it
// when the session closes.
type RootDirectory interface {
	// RootDirectoryPrefix starts the name of each session's directory
	// ("vfsd-weakincentives-"); the session's ID and a random part follow.
	RootDirectoryPrefix() string
}

// StateReporter is implemented by contracts whose documents expose the
// session's state to the orchestrator (weakincentives'
// select_latest(session, VirtualFileSystem)). The daemon serves it at GET
// /v1/sessions/{id}/contract/state.
type StateReporter interface {
	// State returns the state, ready to encode as JSON. rootPath is a
	// directory on disk holding the session's files (see RootDirectory),
	// or "" when there is none.
	State(ctx context.Context, env *Env, rootPath string) (any, error)
}
