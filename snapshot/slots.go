package snapshot

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vfsd/vfsd/vfs"
)

// slotPoolSize is how many prepared session directories a repository keeps.
const slotPoolSize = 4

// slotRefillDelay is how long the pool waits after a session was created
// before it prepares the next directory, unless it ran dry: preparing syncs
// the disk, and doing that while a fork syncs its journal slows the fork.
const slotRefillDelay = 20 * time.Millisecond

// slotPool keeps a few prepared session directories (vfs.PrepareDir) ready,
// refilled in the background, so that creating a session — a fork, above
// all — writes one journal record instead of creating directories and
// files, which is slow on many disks.
type slotPool struct {
	dir string

	mu    sync.Mutex
	ready []string

	kick      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

func newSlotPool(dir string, ready []string) *slotPool {
	p := &slotPool{dir: dir, ready: ready, kick: make(chan struct{}, 1), done: make(chan struct{})}
	p.wg.Add(1)
	go p.run()
	p.refill()
	return p
}

// newDirName returns a fresh random name for a session directory.
func newDirName() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return slotDirPrefix + hex.EncodeToString(b[:])
}

// take returns a prepared directory, or a fresh path for vfs.Create to lay
// out itself when none is ready.
func (p *slotPool) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.refill()
	if n := len(p.ready); n > 0 {
		dir := p.ready[n-1]
		p.ready = p.ready[:n-1]
		return dir
	}
	return filepath.Join(p.dir, newDirName())
}

// refill asks the background goroutine to top the pool up.
func (p *slotPool) refill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *slotPool) run() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case <-p.kick:
		}
		p.mu.Lock()
		empty := len(p.ready) == 0
		p.mu.Unlock()
		if !empty {
			select {
			case <-p.done:
				return
			case <-time.After(slotRefillDelay):
			}
		}
		for {
			p.mu.Lock()
			full := len(p.ready) >= slotPoolSize
			p.mu.Unlock()
			if full {
				break
			}
			dir := filepath.Join(p.dir, newDirName())
			if err := vfs.PrepareDir(dir); err != nil {
				break // sessions are created in place until the next kick
			}
			p.mu.Lock()
			p.ready = append(p.ready, dir)
			p.mu.Unlock()
		}
	}
}

// close stops the background refill; closing twice is fine.
func (p *slotPool) close() {
	p.closeOnce.Do(func() { close(p.done) })
	p.wg.Wait()
}

// Session directories are named after their session,
//
//	s-<session ID>.<16 hex digits>
//
// so that opening a repository finds every session by listing one
// directory, without reading a file per session. The digits are the
// prepared directory's (slotPool) the session took, which NewSession
// renames before it writes the journal's header: a crash between the two
// leaves a directory named for a session that holds none, dropped on its
// first use (Repo.Session). A session ID may contain dots, the digits do
// not: the name splits at its last dot. Deleting a session renames its
// directory to x-<name> before removing it, and OpenRepo finishes removals
// that were cut short.
const (
	slotDirPrefix    = "d-" // a prepared slot, or an older repository's session
	sessionDirPrefix = "s-"
	deletedDirPrefix = "x-"
)

// sessionDirName is the directory name of session id in the slot named
// slot (d-<digits>).
func sessionDirName(id, slot string) string {
	return sessionDirPrefix + id + "." + strings.TrimPrefix(slot, slotDirPrefix)
}

// parseSessionDirName returns the session ID a directory name gives, if it
// is a session directory's name.
func parseSessionDirName(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, sessionDirPrefix)
	if !ok {
		return "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot < 0 {
		return "", false
	}
	id, digits := rest[:dot], rest[dot+1:]
	if len(digits) != 16 || strings.Trim(digits, "0123456789abcdef") != "" || !ValidSessionID(id) {
		return "", false
	}
	return id, true
}

// nameSessionDir gives slot, a directory slotPool.take returned (prepared,
// or a path to lay out), its session's name, and returns its new path.
func nameSessionDir(id, slot string) (string, error) {
	named := filepath.Join(filepath.Dir(slot), sessionDirName(id, filepath.Base(slot)))
	if err := os.Rename(slot, named); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("name the session's directory: %w", err)
	}
	return named, nil
}

// newerSessionDir reports whether session directory a holds a newer session
// than b, the two naming one session: that happens only when a deletion was
// cut short before its rename and the ID was used again. The journals'
// headers decide; a directory without one loses.
func newerSessionDir(a, b string) bool {
	ha, erra := vfs.ReadHeader(a)
	hb, errb := vfs.ReadHeader(b)
	switch {
	case erra != nil:
		return false
	case errb != nil:
		return true
	}
	return ha.Created > hb.Created
}
