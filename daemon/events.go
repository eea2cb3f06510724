package daemon

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs"
)

// eventBuffer is how many notices a slow event-stream reader may fall
// behind before notices are dropped (and a "lost" event says how many).
const eventBuffer = 1024

// Subscription follows one session's changes from the moment it is made:
// Changes delivers them, Done is closed when the session is closed or the
// daemon stops (Reason says which). A reader that falls eventBuffer
// notices behind loses the excess (Lost counts them). Close it when done.
type Subscription struct {
	// Session is the session followed.
	Session string
	// Changes delivers the session's changes, in order (EventOf
	// describes one on the wire).
	Changes <-chan vfs.Notice

	e       *entry
	d       *Daemon
	dropped atomic.Int64
	done    chan struct{}
	cancel  func()
	once    sync.Once // closes done
	closed  sync.Once // releases the subscription
}

// Subscribe follows session id's changes.
func (d *Daemon) Subscribe(ctx context.Context, id string) (*Subscription, error) {
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	changes := make(chan vfs.Notice, eventBuffer)
	sub := &Subscription{Session: e.id, Changes: changes, e: e, d: d, done: make(chan struct{})}
	sub.cancel = e.s.Subscribe(func(n vfs.Notice) {
		select {
		case changes <- n:
		default:
			sub.dropped.Add(1)
		}
	})
	go func() {
		select {
		case <-e.done:
		case <-d.stopping:
		case <-sub.done:
			return
		}
		sub.once.Do(func() { close(sub.done) })
	}()
	d.metrics.streams.Add(1)
	return sub, nil
}

// Done is closed when the session is closed, the daemon stops, or the
// subscription is closed.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Reason says why Done was closed.
func (s *Subscription) Reason() string {
	select {
	case <-s.d.stopping:
		return "the daemon is stopping"
	case <-s.e.done:
		return "the session was closed (" + s.e.closeReason + ")"
	default:
		return "the subscription was closed"
	}
}

// Lost returns how many changes were dropped since it was last called,
// the reader having fallen behind.
func (s *Subscription) Lost() int64 { return s.dropped.Swap(0) }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.closed.Do(func() {
		s.cancel()
		s.d.metrics.streams.Add(-1)
	})
	s.once.Do(func() { close(s.done) })
}

// EventOf describes a change notice on the wire.
func EventOf(n vfs.Notice) api.Event {
	ev := api.Event{Seq: n.Seq, Op: string(n.Event.Op), Snapshot: n.Event.Snapshot, Origin: n.Origin}
	for _, c := range n.Event.Changes() {
		ev.Paths = append(ev.Paths, wirePath(c.Path))
	}
	return ev
}
