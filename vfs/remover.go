package vfs

import (
	"os"
	"sync"

	"github.com/vfsd/vfsd/internal/crashpoint"
)

// remover unlinks the session's dropped upper files in the background, so
// that removing or replacing a copied-up file does not wait for the file
// system to unlink its upper file. Upper file numbers are never reused, so
// a late unlink can only ever hit the file it was meant for; a crash before
// it happens leaves a stray that recovery removes.
type remover struct {
	once  sync.Once
	paths chan []string
	idle  sync.WaitGroup // one count per batch queued and not yet unlinked
	done  chan struct{}
}

// removerQueue is how many batches of unlinks may wait; beyond it, callers unlink
// themselves.
const removerQueue = 4096

// remove unlinks path soon.
func (r *remover) remove(path string) { r.removeAll([]string{path}) }

// removeAll unlinks paths soon, in one batch (a snapshot's sealed upper
// files); the caller must not change the slice afterwards.
func (r *remover) removeAll(paths []string) {
	if len(paths) == 0 {
		return
	}
	r.once.Do(func() {
		r.paths = make(chan []string, removerQueue)
		r.done = make(chan struct{})
		go r.run()
	})
	r.idle.Add(1)
	select {
	case r.paths <- paths:
	default:
		unlinkAll(paths)
		r.idle.Done()
	}
}

func (r *remover) run() {
	defer close(r.done)
	for ps := range r.paths {
		unlinkAll(ps)
		r.idle.Done()
	}
}

func unlinkAll(paths []string) {
	for _, p := range paths {
		_ = os.Remove(p)
		crashpoint.Hit("upper-unlinked")
	}
}

// wait returns once every unlink queued so far is done.
func (r *remover) wait() { r.idle.Wait() }

// close waits for the queued unlinks and stops the remover; it must not
// be used afterwards.
func (r *remover) close() {
	r.once.Do(func() {}) // never started: nothing to stop
	if r.paths != nil {
		close(r.paths)
		<-r.done
	}
}
