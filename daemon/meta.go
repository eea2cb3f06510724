package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vfsd/vfsd/internal/atomicfile"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/hostmount"
)

// metaFormat versions the metadata files.
const metaFormat = 1

// sessionMeta is what the daemon keeps about a session besides its state:
// it is written atomically to meta/ID.json before the session exists and
// on every change, so a restart, or a crash, finds it as it was.
type sessionMeta struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Label is the note the session was created with.
	Label string `json:"label,omitempty"`
	// Expires is when the session is closed; zero means never.
	Expires time.Time `json:"expires,omitzero"`
	Policy  string    `json:"policy"`
	Profile string    `json:"profile"`
	// Contract is the session's tool contract; "" (metadata written before
	// contracts existed) is vfsd's own.
	Contract string `json:"contract,omitempty"`
	// PolicyObject is the session's policy in its complete form
	// (policy.FromJSON) when it was given as data and is no preset; the
	// session then enforces it, and Policy is only its name.
	PolicyObject json.RawMessage `json:"policy_object,omitempty"`
	// ContractOptions are the contract's session-creation options
	// (contract.SessionInitializer), applied at creation and replayed
	// after every reset.
	ContractOptions json.RawMessage `json:"contract_options,omitempty"`
	// OptionsInherited says ContractOptions are a fork's origin's, kept on
	// record: the fork started from the state they made, and they are
	// applied again neither at its creation nor at its resets.
	OptionsInherited bool `json:"contract_options_inherited,omitempty"`
	// Base is the snapshot the session started from.
	Base string `json:"base,omitempty"`
	// Import is the snapshot of the host as last imported or applied:
	// apply writes back what changed since.
	Import string `json:"import,omitempty"`
	ForkOf string `json:"fork_of,omitempty"`
	// Mounts are the host folders the session (or the session it was
	// forked from) was staged from.
	Mounts []hostmount.Mount `json:"mounts,omitempty"`
	// Restage says reset imports Mounts again (the session was created from
	// them); otherwise reset returns to Base.
	Restage bool `json:"restage,omitempty"`
	// TokenHash is the SHA-256 of the session's token, hex.
	TokenHash string `json:"token_hash"`
	// Fuse are the session's FUSE mounts, mounted again at start.
	Fuse []api.FuseMount `json:"fuse,omitempty"`
	// RootDir is the directory on disk the daemon made for a session whose
	// contract asks for one (contract.RootDirectory): its files, a FUSE
	// mount of the session (also in Fuse) or, with RootDirCopy, a copy
	// refreshed whenever the contract's state is read. Removed when the
	// session closes.
	RootDir     string `json:"root_dir,omitempty"`
	RootDirCopy bool   `json:"root_dir_copy,omitempty"`
	// Quota is the quota asked for at creation, a fork's zero fields
	// filled from its origin's (inheritQuota); zero fields left: the
	// daemon's defaults, -1: no limit.
	Quota *api.Quota `json:"quota,omitempty"`
	// Owned are snapshots made for the session rather than by it — its
	// imports (the one it was staged from, restaged to, applied at) and
	// the snapshot a fork started from — deleted when it closes unless
	// another session still needs them.
	Owned []string `json:"owned,omitempty"`
	// ImportMarks record the imports rebases moved Import from, in order:
	// a rewind to before a rebase brings its import back.
	ImportMarks []importMark `json:"import_marks,omitempty"`
	// Conflicted are the paths a rebase left conflict markers in; apply
	// refuses those that still hold them (unresolvedConflicts).
	Conflicted []string `json:"conflicted,omitempty"`

	// UID identifies this incarnation of the session: random, never
	// reused, unlike ID. Snapshots taken of it record it, and a session
	// token reaches the snapshots of its own incarnation only.
	UID string `json:"uid,omitempty"`
	// Legacy marks metadata written before UIDs existed (given one at
	// load): snapshots of ID without a UID that were taken after Created
	// are this incarnation's too.
	Legacy bool `json:"legacy,omitempty"`
	// Lineage is the UID of the session the admin created whose fork
	// budget (its policy's max_forks) this one, a fork made with a session
	// token, draws on; "" when the admin created this session. LineageOf
	// is that session's ID, for people.
	Lineage   string `json:"lineage,omitempty"`
	LineageOf string `json:"lineage_of,omitempty"`
	// Fleet is the session's ownership in the fleet (fleet.go).
	Fleet *fleetMeta `json:"fleet,omitempty"`
	// KeepRef is the ref of the fleet moved to each head of the session.
	KeepRef string `json:"keep_ref,omitempty"`
}

// newSessionUID returns a fresh incarnation ID: 128 random bits, hex.
func newSessionUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("daemon: no randomness for a session UID: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// expired reports whether the session's lifetime is over at now.
func (m *sessionMeta) expired(now time.Time) bool {
	return !m.Expires.IsZero() && !now.Before(m.Expires)
}

// metaStore keeps sessions' metadata files in one directory.
type metaStore struct{ dir string }

func (ms metaStore) path(id string) string { return filepath.Join(ms.dir, id+".json") }

// save writes m atomically and durably.
func (ms metaStore) save(m *sessionMeta) error {
	m.Format = metaFormat
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("save session %s metadata: %w", m.ID, err)
	}
	if err := atomicfile.WriteFile(ms.path(m.ID), append(b, '\n'), 0o600, ms.dir); err != nil {
		return fmt.Errorf("save session %s metadata: %w", m.ID, err)
	}
	return syncDir(ms.dir)
}

// remove deletes a session's metadata file.
func (ms metaStore) remove(id string) error {
	if err := os.Remove(ms.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove session %s metadata: %w", id, err)
	}
	return syncDir(ms.dir)
}

// loadAll reads every metadata file, removing the temporary files of saves
// a crash interrupted.
func (ms metaStore) loadAll() (map[string]*sessionMeta, error) {
	if err := os.MkdirAll(ms.dir, 0o700); err != nil {
		return nil, fmt.Errorf("session metadata: %w", err)
	}
	entries, err := os.ReadDir(ms.dir)
	if err != nil {
		return nil, fmt.Errorf("session metadata: %w", err)
	}
	out := make(map[string]*sessionMeta)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			_ = os.Remove(filepath.Join(ms.dir, name)) // an interrupted save
			continue
		}
		if !strings.HasSuffix(name, ".json") || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(ms.dir, name))
		if err != nil {
			return nil, fmt.Errorf("session metadata %s: %w", name, err)
		}
		var m sessionMeta
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("session metadata %s: %w (move the file away to start without it)", name, err)
		}
		if m.Format != metaFormat || m.ID+".json" != name {
			return nil, fmt.Errorf("session metadata %s: format %d for session %q; this daemon reads format %d", name, m.Format, m.ID, metaFormat)
		}
		out[m.ID] = &m
	}
	return out, nil
}

// syncDir makes a directory's entries durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
