package vfs

import (
	"os"
	"sync"
)

// upperPool keeps a few empty upper files created ahead of need, in the
// background, so that creating a file through a handle (what tar and git do
// for every file through a mount) does not wait for the file system to
// create its upper file. The files are ordinary upper files that nothing
// references yet: a crash leaves them as strays, which recovery removes
// (recoverUppers).
type upperPool struct {
	mu    sync.Mutex
	on    bool
	files chan *upperFile
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// upperPoolSize is how many empty upper files the pool keeps ready.
const upperPoolSize = 64

// KeepEmptyUppers turns on (or off) a pool of empty upper files that a
// background goroutine keeps filled, for the files created or truncated
// through handles: what a FUSE mount does for every file tar or git
// writes. Creating such a file then does not wait for the file system to
// create its upper file. Off by default; turning it off (and Close)
// removes the files not taken.
func (s *Session) KeepEmptyUppers(on bool) {
	if on {
		s.pool.start(s)
	} else {
		s.pool.close()
	}
}

func (p *upperPool) start(s *Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.mu.RLock()
	closed := s.closed // Close stops the pool after setting it
	s.mu.RUnlock()
	if p.on || closed {
		return
	}
	p.on = true
	p.files = make(chan *upperFile, upperPoolSize)
	p.kick = make(chan struct{}, 1)
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	p.kick <- struct{}{}
	go p.fill(s, p.files, p.kick, p.stop, p.done)
}

// take returns an empty upper file from the pool, or nil when it has none
// or is off.
func (p *upperPool) take() *upperFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return nil
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

// fill tops files up whenever kicked, until stopped.
func (p *upperPool) fill(s *Session, files chan *upperFile, kick, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-kick:
		}
		for len(files) < cap(files) {
			select {
			case <-stop:
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
			files <- uf
		}
	}
}

// close stops the pool and removes the files it holds.
func (p *upperPool) close() {
	p.mu.Lock()
	if !p.on {
		p.mu.Unlock()
		return
	}
	p.on = false
	files, done := p.files, p.done
	close(p.stop)
	p.mu.Unlock()
	<-done
	for {
		select {
		case uf := <-files:
			_ = os.Remove(uf.path)
		default:
			return
		}
	}
}
