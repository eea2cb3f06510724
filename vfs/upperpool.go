package vfs

import (
	"os"
	"sync"
)

// upperPool keeps a few empty upper files created ahead of need, in the
// background, so that creating a file through a handle (what tar and git do
// for every file) does not wait for the file system to create its upper
// file. The files are ordinary upper files that nothing references yet: a
// crash leaves them as strays, which recovery removes (recoverUppers).
type upperPool struct {
	once  sync.Once
	files chan *upperFile
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// upperPoolSize is how many empty upper files the pool keeps ready.
const upperPoolSize = 64

// take returns an empty upper file from the pool, or nil when it has none,
// starting the pool on first use.
func (p *upperPool) take(s *Session) *upperFile {
	p.once.Do(func() {
		p.files = make(chan *upperFile, upperPoolSize)
		p.kick = make(chan struct{}, 1)
		p.stop = make(chan struct{})
		p.done = make(chan struct{})
		go p.fill(s)
	})
	if p.stop == nil {
		return nil // closed before it was started
	}
	var uf *upperFile
	select {
	case uf = <-p.files:
	default:
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return uf
}

// fill tops the pool up whenever take asks, until close.
func (p *upperPool) fill(s *Session) {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		}
		for len(p.files) < cap(p.files) {
			select {
			case <-p.stop:
				return
			default:
			}
			uf, err := s.createUpper()
			if err != nil {
				break // the caller creates its own and reports the error
			}
			// Waiting files hold no descriptor: file() opens one on the
			// first write, within the descriptor cache's bound.
			uf.f.Close()
			uf.f = nil
			p.files <- uf
		}
	}
}

// close stops the pool and removes the files it holds.
func (p *upperPool) close() {
	p.once.Do(func() {}) // never started: nothing to stop
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	for {
		select {
		case uf := <-p.files:
			_ = os.Remove(uf.path)
		default:
			return
		}
	}
}
