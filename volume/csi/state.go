package csi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/internal/atomicfile"
	"github.com/vfsd/vfsd/snapshot"
)

// volumeRecord is what the driver keeps of a volume besides its session:
// the request that made it, to answer a repeated CreateVolume (the same
// volume, or already_exists when it asks for something else), and how to
// mount it.
type volumeRecord struct {
	// ID is the volume's ID and its session's.
	ID string `json:"id"`
	// Name is CreateVolume's name, or the kubelet's volume handle for an
	// inline volume.
	Name string `json:"name"`
	// Ephemeral marks an inline volume: its session is closed when the
	// pod's volume is unpublished.
	Ephemeral bool   `json:"ephemeral,omitempty"`
	Params    params `json:"params"`
	// Capacity is the byte quota the volume was created with (0: the
	// daemon's default).
	Capacity int64 `json:"capacity,omitempty"`
	// FromSnapshot and FromVolume are its content source.
	FromSnapshot string `json:"from_snapshot,omitempty"`
	FromVolume   string `json:"from_volume,omitempty"`
	// Target is where an inline volume is published (its one pod's path).
	Target  string    `json:"target,omitempty"`
	Created time.Time `json:"created"`
}

// records keeps volume records as files DIR/volumes/ID.json, each written
// atomically.
type records struct{ dir string }

func newRecords(stateDir string) (*records, error) {
	dir := filepath.Join(stateDir, "volumes")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("csi state: %w", err)
	}
	return &records{dir: dir}, nil
}

func (r *records) file(id string) string { return filepath.Join(r.dir, id+".json") }

// get returns volume id's record, or nil when there is none.
func (r *records) get(id string) (*volumeRecord, error) {
	if !snapshot.ValidSessionID(id) {
		return nil, nil
	}
	b, err := os.ReadFile(r.file(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csi state: %w", err)
	}
	var rec volumeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("csi state %s: %w", r.file(id), err)
	}
	return &rec, nil
}

// list returns every record, by ID.
func (r *records) list() ([]*volumeRecord, error) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, fmt.Errorf("csi state: %w", err)
	}
	var out []*volumeRecord
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, err := r.get(id)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

func (r *records) put(rec *volumeRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(r.file(rec.ID), b, 0o600, ""); err != nil {
		return fmt.Errorf("csi state: %w", err)
	}
	return nil
}

func (r *records) remove(id string) error {
	if err := os.Remove(r.file(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("csi state: %w", err)
	}
	return nil
}

// sessionID is the session (and volume) ID for a CO-given name: the name
// itself when it is a valid session ID (the provisioner's pvc-UUID), else
// "v-" and a digest of it (the kubelet's 68-character inline handles,
// names with spaces, and names that start with "v-" themselves).
func sessionID(name string) string {
	if snapshot.ValidSessionID(name) && !strings.HasPrefix(name, "v-") { // v-: the digests'
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "v-" + hex.EncodeToString(sum[:16])
}

// keyedMutex serialises the calls on one key (a volume name, a target
// path, a snapshot name): CSI lets a CO send the same call again while
// the first is in flight.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	n int
}

// lock locks key and returns what unlocks it.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.n++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.n--; l.n == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
