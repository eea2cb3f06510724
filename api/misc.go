package api

import "encoding/json"

// ToolList answers GET /v1/sessions/{id}/tools: the tools in a profile's
// provider format, and the prompt section that goes with them.
type ToolList struct {
	Profile string          `json:"profile"`
	Tools   json.RawMessage `json:"tools"`
	Prompt  string          `json:"prompt"`
	// Contract is the session's contract, whose tools these are.
	Contract string `json:"contract,omitempty"`
}

// ToolResult is the body of POST /v1/sessions/{id}/tools/{name}?text=true:
// the receipt and its text rendering for a model. Without text=true the
// body is the receipt alone.
type ToolResult struct {
	// Receipt is the result's body: vfsd's receipt, or the object the
	// session's contract's document gives.
	Receipt json.RawMessage `json:"receipt"`
	Text    string          `json:"text"`
	// Status is the result's status word or error code (as the
	// Vfsd-Tool-Status header), IsError whether the call failed.
	Status  string `json:"status,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// ToolStatusHeader carries a tool call's receipt status on the response,
// so that callers can branch without parsing the receipt.
const ToolStatusHeader = "Vfsd-Tool-Status"

// ToolErrorHeader is "true" on the response of a tool call that failed
// (contract.Result.IsError), and absent otherwise: under a contract other
// than vfsd's, a status word alone does not say whether a call failed.
const ToolErrorHeader = "Vfsd-Tool-Error"

// ToolContractHeader names the session's contract on every tool call
// response.
const ToolContractHeader = "Vfsd-Tool-Contract"

// ApplyRequest is the body of POST /v1/sessions/{id}/apply.
type ApplyRequest struct {
	DryRun bool `json:"dry_run,omitempty"`
	// KeepSetID writes set-user-ID and set-group-ID bits and file
	// capabilities (security.capability) of files as the session has
	// them. Without it a file keeps only those the host had on it, and
	// only while its content is unchanged; the others are left out and
	// noted (hostmount.ApplyOptions.KeepSetID).
	KeepSetID bool `json:"keep_setid,omitempty"`
	// AllowConflicts applies files that still hold the conflict markers a
	// rebase left (<<<<<<< session ... >>>>>>> host). Without it a real
	// apply refuses while any does (conflict), as git refuses to commit
	// unmerged paths.
	AllowConflicts bool `json:"allow_conflicts,omitempty"`
}

// ApplyReport tells what an apply wrote to the host, or would write.
type ApplyReport struct {
	DryRun    bool          `json:"dry_run"`
	Applied   []ApplyChange `json:"applied"`
	Conflicts []ApplyChange `json:"conflicts"`
	// Outside lists changed session paths that no mount maps to the host.
	Outside []string `json:"outside,omitempty"`
	// ImportSnapshot is the session's import snapshot after a real apply:
	// the previous one with exactly the changes applied (the session's
	// state when everything applied), so the next apply neither redoes
	// nor undoes this one; "" for a dry run.
	ImportSnapshot string `json:"import_snapshot,omitempty"`
	// Unresolved lists the files that still hold a rebase's conflict
	// markers: a dry run shows them, a real apply refuses them unless
	// ApplyRequest.AllowConflicts.
	Unresolved []string `json:"unresolved,omitempty"`
}

// ApplyChange is one path an apply wrote, would write, or refused.
type ApplyChange struct {
	Path     string `json:"path"`
	HostPath string `json:"host_path"`
	Action   string `json:"action"` // write, mkdir, symlink, mknod, link, chmod, metadata, delete or rmdir
	Conflict string `json:"conflict,omitempty"`
	// Note says how an applied change differs from the session's (a hard
	// link written as a copy, an owner a non-root daemon could not give).
	Note string `json:"note,omitempty"`
}

// Blob answers POST /v1/blobs.
type Blob struct {
	BlobRef   string `json:"blob_ref"`
	SizeBytes int64  `json:"size_bytes"`
}

// MountRequest is the body of POST /v1/sessions/{id}/mount.
type MountRequest struct {
	// Dir is an existing host directory to mount the session at.
	Dir      string `json:"dir"`
	ReadOnly bool   `json:"read_only,omitempty"`
	// AllowOther lets users other than the daemon's in. It always comes
	// with the kernel's permission checks (default_permissions): every
	// user is held to the files' permission bits and owner.
	AllowOther bool `json:"allow_other,omitempty"`
	// UID and GID stand for the session's default owner in the mount
	// (the daemon's user and group unless the session says otherwise):
	// files it owns show as owned by UID/GID, and what UID/GID create is
	// stored as its (the two IDs swap places). With allow_other, the
	// container user that should have the owner's rights. Files with
	// other owners show their own.
	UID uint32 `json:"uid,omitempty"`
	GID uint32 `json:"gid,omitempty"`
	// NoDefaultPermissions turns off the kernel's permission checks
	// (default_permissions, on by default): every caller may then do what
	// the daemon's user may, whatever owners and modes say. Ignored with
	// allow_other.
	NoDefaultPermissions bool `json:"no_default_permissions,omitempty"`
	// Backend is how the session is served: "fuse" (the default; any
	// user, live and coherent), "overlay" (the kernel's overlayfs over the
	// blob store: native speed, root and Linux 6.5+ only; the kernel's
	// changes are ingested at snapshot, diff, apply, unmount and before
	// tool calls) or "auto" (overlay where the daemon can mount it and no
	// uid/gid mapping is asked, FUSE otherwise).
	Backend string `json:"backend,omitempty"`
	// AllowSetID mounts without nosuid: the set-user-ID and set-group-ID
	// bits and file capabilities of the session's files take effect when
	// they are run from the mount. Without it (the default) they are kept
	// as data but never honoured, so that whoever was root in the mount
	// cannot become root on the host through it. Admin only, as every
	// mount is.
	AllowSetID bool `json:"allow_setid,omitempty"`
	// AllowDevices mounts without nodev: the session's device nodes open
	// the host's devices. Without it (the default) they are kept as data
	// and opening one fails (EACCES).
	AllowDevices bool `json:"allow_devices,omitempty"`
}

// The mount backends (MountRequest.Backend, FuseMount.Backend).
const (
	BackendFUSE    = "fuse"
	BackendOverlay = "overlay"
	BackendAuto    = "auto"
)

// FuseMount is a session's mount (FUSE or kernel overlay: see Backend).
type FuseMount struct {
	Dir        string `json:"dir"`
	ReadOnly   bool   `json:"read_only,omitempty"`
	AllowOther bool   `json:"allow_other,omitempty"`
	// DefaultPermissions says the kernel checks permission bits and
	// ownership: set unless NoDefaultPermissions, always with AllowOther.
	DefaultPermissions bool   `json:"default_permissions,omitempty"`
	UID                uint32 `json:"uid,omitempty"`
	GID                uint32 `json:"gid,omitempty"`
	// NoDefaultPermissions records that the mount was asked without the
	// kernel's checks (mounts recorded before it existed had them only
	// with AllowOther; they get them now).
	NoDefaultPermissions bool `json:"no_default_permissions,omitempty"`
	// Backend is the backend serving it: "overlay", or "fuse" (also when
	// empty: mounts recorded before backends).
	Backend string `json:"backend,omitempty"`
	// BackendWhy says why that backend serves it: asked for, or what
	// "auto" found ("auto: the kernel overlay is not available here: ...").
	BackendWhy string `json:"backend_why,omitempty"`
	// AllowSetID and AllowDevices record that the mount was asked without
	// nosuid or nodev (see MountRequest); every other mount has both.
	AllowSetID   bool `json:"allow_setid,omitempty"`
	AllowDevices bool `json:"allow_devices,omitempty"`
}

// Event is one notice on a session's event stream (data of an SSE
// "change" event).
type Event struct {
	Seq      uint64   `json:"seq"`
	Op       string   `json:"op"`
	Paths    []string `json:"paths,omitempty"`
	Snapshot string   `json:"snapshot,omitempty"`
	// Origin is set for changes made through a FUSE mount.
	Origin string `json:"origin,omitempty"`
}

// SSE event names on GET /v1/sessions/{id}/events.
const (
	EventChange = "change" // data: Event
	EventLost   = "lost"   // data: {"dropped": n}: the reader fell behind
	EventClosed = "closed" // data: {"reason": "..."}: the session is gone
)

// Health answers GET /healthz.
type Health struct {
	Status   string `json:"status"`
	Sessions int    `json:"sessions"`
	Version  string `json:"version"`
	// Private is reported to the admin only (the Unix socket, or the admin
	// token): the daemon's own host paths, which no session stages and
	// which vfsd run hides from the command it sandboxes.
	Private *DaemonPaths `json:"private,omitempty"`
}

// DaemonPaths are the host paths a daemon keeps to itself.
type DaemonPaths struct {
	DataDir   string   `json:"data_dir"`
	Socket    string   `json:"socket"`
	TokenFile string   `json:"token_file"`
	Other     []string `json:"other,omitempty"` // more, e.g. the directory holding the socket
}
