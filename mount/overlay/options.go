package overlay

import "time"

// Kind is what Mount.Kind returns.
const Kind = "overlay"

// BaseLabel labels the snapshot a mount takes of the session when it
// mounts it: the state its lower layers show.
const BaseLabel = "overlay mount base"

// Options configure a Mount.
type Options struct {
	// StateDir holds the mount's upper and work directories and its
	// state (state.json). Required, and one per mount. If it holds the
	// state of an earlier mount of the same session (the daemon was killed),
	// that mount is taken over — adopted if still mounted, mounted again
	// otherwise — and its upper directory ingested: nothing the kernel
	// acknowledged is lost.
	StateDir string
	// MetaCache holds the metadata layers, one per state (MetaKey);
	// required, shared by mounts.
	MetaCache string
	// MetaCacheKeep is how many layers no mount uses MetaCache keeps, the
	// most recently used: after a mount builds a layer, the others are
	// removed (CollectMeta). 0 means DefaultMetaCacheKeep (4); negative
	// keeps every layer.
	MetaCacheKeep int
	// ReadOnly mounts without an upper directory: every change fails with
	// EROFS.
	ReadOnly bool
	// FsName is the source shown in /proc/mounts; "vfsd:<session>" when
	// empty.
	FsName string
	// AllowSetID mounts without nosuid: set-user-ID and set-group-ID bits
	// and file capabilities (security.capability) of the session's files
	// then take effect when they are executed. Off by default: the session
	// keeps them as data (chmod 4755 sticks), but whoever was root in the
	// mount (a vfsd run command, with no capabilities) must not become
	// root on the host through it. For an admin who means it.
	AllowSetID bool
	// AllowDevices mounts without nodev: the session's device nodes then
	// open the host's devices. Off by default (they are kept as data but
	// opening one fails with EACCES). For an admin who means it.
	AllowDevices bool
	// Logf, when set, is told of what fails in the background (a tool's
	// change that could not be applied to the merged directory).
	Logf func(format string, args ...any)
}

// IngestReport tells what one ingest did.
type IngestReport struct {
	Entries  int           `json:"entries"`           // entries of the upper directory read
	Changes  int           `json:"changes"`           // session operations applied
	Hashed   int           `json:"hashed"`            // upper files whose content was stored as a blob
	Bytes    int64         `json:"bytes"`             // their bytes
	Refused  int           `json:"refused,omitempty"` // changes the session could not take, undone in the mount
	Duration time.Duration `json:"duration"`          // time taken
}

// MetaReport tells what BuildMeta did.
type MetaReport struct {
	Dir      string        `json:"dir"`      // the metadata layer
	Cached   bool          `json:"cached"`   // an earlier build was reused: nothing was written
	Entries  int           `json:"entries"`  // nodes written (0 when cached)
	Duration time.Duration `json:"duration"` // time taken
}
