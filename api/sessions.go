package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vfsd/vfsd/internal/strictjson"
)

// Mount is a host folder staged into a session when it is created (a
// hostmount.Mount on the wire).
type Mount struct {
	HostPath        string   `json:"host_path"`
	MountPath       string   `json:"mount_path,omitempty"`
	Include         []string `json:"include_glob,omitempty"`
	Exclude         []string `json:"exclude_glob,omitempty"`
	MaxBytes        int64    `json:"max_bytes,omitempty"`
	FollowSymlinks  bool     `json:"follow_symlinks,omitempty"`
	Gitignore       bool     `json:"gitignore,omitempty"`
	DefaultExcludes bool     `json:"default_excludes,omitempty"`
}

// CreateSessionRequest is the body of POST /v1/sessions. At most one of
// Mounts, Base and Fork says where the session starts; none starts it
// empty. The fork endpoints take the same body without those three.
type CreateSessionRequest struct {
	// ID names the session; the daemon picks one when empty.
	ID string `json:"id,omitempty"`
	// Mounts are host folders to stage into the session; they must lie in
	// the daemon's allow-listed roots.
	Mounts []Mount `json:"mounts,omitempty"`
	// Base is a snapshot ID (or a unique prefix of one) to start from.
	Base string `json:"base,omitempty"`
	// FromRef names a ref of the fleet (see docs/fleets.md) whose
	// snapshot the session starts from; instead of Base.
	FromRef string `json:"from_ref,omitempty"`
	// KeepRef names a ref of the fleet that follows the session: moved
	// to each snapshot of it pushed as its head.
	KeepRef string `json:"keep_ref,omitempty"`
	// Fork is a live session to start from (it is snapshotted first).
	Fork string `json:"fork,omitempty"`
	// Policy is a policy preset: default, weakincentives, x07 or aos.
	// Forks inherit their origin's when empty (and PolicyObject too).
	Policy string `json:"policy,omitempty"`
	// PolicyObject is a policy given as data, a JSON object: on the wire
	// it is "policy" as an object rather than a preset's name (see
	// docs/api.md, "Policies"). It takes vfsd's policy fields (read_roots,
	// caps, allowed_ops, ...) and "base", the preset it starts from, or,
	// in a session whose contract has its own policy fields, those. Give
	// Policy or PolicyObject, not both.
	PolicyObject json.RawMessage `json:"-"`
	// Profile is the tool profile the session's tool list defaults to:
	// openai, anthropic, gemini, minimal or consolidated.
	Profile string `json:"profile,omitempty"`
	// TTL is how long the session lives, as a Go duration ("90m", "24h");
	// "" means the daemon's default, "0" or "never" no expiry.
	TTL string `json:"ttl,omitempty"`
	// Quota bounds what the session may hold; fields left zero inherit: a
	// fork's origin's, a new session's the daemon's defaults (vfsd serve
	// --max-session-bytes ...). Through a session token a fork's quota
	// only shrinks.
	Quota *Quota `json:"quota,omitempty"`
	// Contract is the tool contract the session speaks: "vfsd" (vfsd's own
	// tools, the default), "aos", "weakincentives", "pos_filesystem" or
	// "x07"; an unknown name is invalid_input naming the choices. It fixes the tool names,
	// parameters, results and error codes of the session's tool routes and
	// MCP endpoint. Forks inherit their origin's when empty; a session
	// token's fork may not name another (forbidden).
	Contract string `json:"contract,omitempty"`
	// ContractOptions are the contract's own session-creation options (a
	// JSON object), for contracts whose documents configure a session
	// when it is created (weakincentives: {"mounts": [HostMount ...]}).
	// The daemon applies them once the session exists and again after
	// every reset; if they fail, the session is not created
	// (invalid_input, or the engine's code such as too_large). A contract
	// without options refuses them. A fork keeps its origin's on record
	// without applying them again (it starts from its origin's state,
	// which holds what they did); the admin may give a fork options of its
	// own, a session token may not (forbidden): they may import host
	// folders.
	ContractOptions json.RawMessage `json:"contract_options,omitempty"`
	// Label is a note to remember the session by (at most the daemon's
	// snapshot label limit, 1024 bytes by default); forks do not inherit it.
	Label string `json:"label,omitempty"`
}

// createSessionWire is CreateSessionRequest as JSON, "policy" being either
// form.
type createSessionWire CreateSessionRequest

// MarshalJSON writes "policy" as the preset's name, or as the object when
// PolicyObject is set.
func (r CreateSessionRequest) MarshalJSON() ([]byte, error) {
	var aux struct {
		createSessionWire
		Policy json.RawMessage `json:"policy,omitempty"`
	}
	aux.createSessionWire = createSessionWire(r)
	switch {
	case len(r.PolicyObject) > 0 && r.Policy != "":
		return nil, errors.New("api: give a session's Policy (a preset's name) or its PolicyObject, not both; an object names its preset as \"base\"")
	case len(r.PolicyObject) > 0:
		aux.Policy = r.PolicyObject
	case r.Policy != "":
		b, err := json.Marshal(r.Policy)
		if err != nil {
			return nil, err
		}
		aux.Policy = b
	}
	return json.Marshal(aux)
}

// UnmarshalJSON reads "policy" as a preset's name (a string) into Policy or
// as an object into PolicyObject. It is strict, as the daemon's decoding of
// request bodies is: an unknown field or trailing data is an error.
func (r *CreateSessionRequest) UnmarshalJSON(b []byte) error {
	var aux struct {
		*createSessionWire
		Policy json.RawMessage `json:"policy,omitempty"`
	}
	aux.createSessionWire = (*createSessionWire)(r)
	if err := strictjson.Decode(b, &aux); errors.Is(err, strictjson.ErrTrailingData) {
		return errors.New("the body has data after the JSON object")
	} else if err != nil {
		return err
	}
	p := bytes.TrimSpace(aux.Policy)
	r.Policy, r.PolicyObject = "", nil
	switch {
	case len(p) == 0 || string(p) == "null":
	case p[0] == '"':
		if err := json.Unmarshal(p, &r.Policy); err != nil {
			return err
		}
	case p[0] == '{':
		r.PolicyObject = json.RawMessage(bytes.Clone(p))
	default:
		return &Error{Code: CodeInvalidInput, Status: HTTPStatus(CodeInvalidInput),
			Message: fmt.Sprintf("field \"policy\" must be a preset's name (a string, like \"x07\") or a policy object, not %.40s; see docs/api.md, Policies", p)}
	}
	return nil
}

// Quota bounds what a session may hold. A write, truncation, file creation
// or snapshot that would go past it fails with too_large (EDQUOT through
// a FUSE mount) and changes nothing; removing files always works. In a
// request a zero field inherits (a fork's origin's value, a new session's
// the daemon's default) and -1 means no limit (admin only); in a Session
// (the effective quota) zero is no limit.
type Quota struct {
	// MaxBytes bounds the total size of the session's files.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxFiles bounds its files, directories and symlinks.
	MaxFiles int64 `json:"max_files,omitempty"`
	// MaxSnapshots bounds the snapshots taken of it that exist at once.
	MaxSnapshots int64 `json:"max_snapshots,omitempty"`
}

// CreateSessionResponse answers a session creation or fork.
type CreateSessionResponse struct {
	Session Session `json:"session"`
	// Token is the session-scoped bearer token: it reaches this session's
	// endpoints only. It is shown once; the daemon keeps only its hash.
	Token string `json:"token"`
	// Import reports the staging of the session's mounts, if it had any.
	Import *ImportReport `json:"import,omitempty"`
}

// UpdateSessionRequest is the body of PATCH /v1/sessions/{id}.
type UpdateSessionRequest struct {
	// TTL restarts the session's lifetime from now ("0" or "never": no
	// expiry).
	TTL string `json:"ttl,omitempty"`
	// KeepRef, when set, names the ref of the fleet that follows the
	// session from now on ("-" stops it). At least one of TTL and KeepRef.
	KeepRef string `json:"keep_ref,omitempty"`
}

// Session describes a session.
type Session struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	// Label is the note the session was created with.
	Label     string     `json:"label,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Policy    string     `json:"policy"`
	Profile   string     `json:"profile"`
	// Contract is the session's tool contract ("vfsd" unless it chose
	// another).
	Contract string `json:"contract"`
	// ContractOptions are the contract options the session was created
	// with (CreateSessionRequest.ContractOptions), replayed on reset.
	ContractOptions json.RawMessage `json:"contract_options,omitempty"`
	// Calls counts the tool calls in the session's call log (GET
	// /v1/sessions/{id}/calls): the number the next call gets, less one.
	Calls uint64 `json:"calls,omitempty"`
	// EffectivePolicy is the policy the session's tools enforce, complete
	// (every field, no base applied): a preset's, or the policy object it
	// was created with as decoded.
	EffectivePolicy json.RawMessage `json:"effective_policy,omitempty"`
	// Base is the snapshot the session started from ("" when empty).
	Base string `json:"base,omitempty"`
	// ImportSnapshot is what the host looked like at the last import or
	// apply: apply writes the changes since it.
	ImportSnapshot string  `json:"import_snapshot,omitempty"`
	ForkOf         string  `json:"fork_of,omitempty"`
	Mounts         []Mount `json:"mounts,omitempty"`
	// ResetRestages says that a reset imports the mounts again (a session
	// created from mounts); otherwise reset returns to Base.
	ResetRestages bool        `json:"reset_restages,omitempty"`
	FuseMounts    []FuseMount `json:"fuse_mounts,omitempty"`
	// LastSnapshot is the snapshot last taken of, or restored into, the
	// session.
	LastSnapshot string `json:"last_snapshot,omitempty"`
	Seq          uint64 `json:"seq"`   // events in the journal since its base
	Dirty        int    `json:"dirty"` // paths changed since LastSnapshot
	Files        int64  `json:"files"`
	Bytes        int64  `json:"bytes"`
	// Quota is the session's effective quota (0: no limit).
	Quota *Quota `json:"quota,omitempty"`
	// Owner is the session's ownership in the fleet, for a daemon with a
	// remote; absent otherwise.
	Owner *SessionOwner `json:"owner,omitempty"`

	// UID identifies this incarnation of the session: unlike its ID, it is
	// never reused. Snapshots taken of it carry it (Snapshot.SessionUID).
	UID string `json:"uid,omitempty"`
	// Forks counts the open forks that draw on the fork budget this
	// session draws on (its policy's max_forks): the forks made with
	// session tokens from the session the admin created, from its forks,
	// and so on. Closing a fork gives its place back.
	Forks int `json:"forks,omitempty"`
	// ForkBudgetOf is the session whose fork budget this one draws on when
	// it is not its own: a fork made with a session token.
	ForkBudgetOf string `json:"fork_budget_of,omitempty"`
	// OpenError is set, in a listing, on a session the daemon found at
	// start but cannot open (recover from its journal): why, and what to
	// do. Its state fields (LastSnapshot, Seq, Dirty, Files, Bytes, Calls)
	// are then unknown and zero; it can still be closed.
	OpenError string `json:"open_error,omitempty"`
}

// ResetResponse answers POST /v1/sessions/{id}/reset.
type ResetResponse struct {
	Session Session       `json:"session"`
	Import  *ImportReport `json:"import,omitempty"`
}

// ImportReport tells what staging host folders did.
type ImportReport struct {
	Snapshot string              `json:"snapshot"`
	Files    int64               `json:"files"`
	Dirs     int64               `json:"dirs"`
	Symlinks int64               `json:"symlinks"`
	Special  int64               `json:"special,omitempty"` // fifos, sockets and devices
	Links    int64               `json:"links,omitempty"`   // further names of hard-linked files
	Bytes    int64               `json:"bytes"`
	Cached   int64               `json:"cached"`
	Skipped  []ImportSkip        `json:"skipped"`
	Mounts   []ImportMountReport `json:"mounts"`
	// Warnings say what looks like a mistake: a folder that staged
	// nothing because its include globs matched nothing, say.
	Warnings []string `json:"warnings,omitempty"`
	ScanMs   float64  `json:"scan_ms"`
	TotalMs  float64  `json:"total_ms"`
}

// ImportSkip is a host entry an import left out, and why.
type ImportSkip struct {
	HostPath string `json:"host_path"`
	Reason   string `json:"reason"`
	// Xattr names the extended attribute left out, when only it was.
	Xattr string `json:"xattr,omitempty"`
}

// ImportMountReport is what one mount contributed to an import.
type ImportMountReport struct {
	HostPath  string `json:"host_path"`
	MountPath string `json:"mount_path"`
	Files     int64  `json:"files"`
	Bytes     int64  `json:"bytes"`
}

// SessionList answers GET /v1/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// Progress is how far a long operation has come: an import ("scan", when
// the totals are not known yet and are zero, then "import"), or a
// snapshot sealing the files written since the last one into blobs
// ("seal").
type Progress struct {
	Phase      string `json:"phase"` // "scan", "import" or "seal"
	Files      int64  `json:"files"`
	FilesTotal int64  `json:"files_total"`
	Bytes      int64  `json:"bytes"`
	BytesTotal int64  `json:"bytes_total"`
}

// ProgressLine is one line of a progress stream (?progress=true on session
// creation and reset; application/x-ndjson): progress lines, then one line
// with the result or the error.
type ProgressLine struct {
	Progress *Progress       `json:"progress,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *Error          `json:"error,omitempty"`
	// Status is the HTTP status the result or the error would have had.
	Status int `json:"status,omitempty"`
}
