package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs"
)

// eventBuffer is how many notices a slow event-stream reader may fall
// behind before notices are dropped (and a "lost" event says how many).
const eventBuffer = 1024

// keepaliveEvery is how often an idle event stream sends a comment, so
// proxies and clients see the connection alive.
const keepaliveEvery = 15 * time.Second

// handleEvents streams a session's change notices as server-sent events:
// "change" events (data: api.Event, id: the journal sequence number) from
// the moment of the request on, "lost" when the reader fell behind, and a
// last "closed" event when the session or the daemon goes away. There is
// no replay: a reconnecting reader starts from the present.
func (d *Daemon) handleEvents(w http.ResponseWriter, r *http.Request) error {
	e, err := d.lookup(r.PathValue("id"))
	if err != nil {
		return err
	}
	notices := make(chan vfs.Notice, eventBuffer)
	var dropped atomic.Int64
	cancel := e.s.Subscribe(func(n vfs.Notice) {
		select {
		case notices <- n:
		default:
			dropped.Add(1)
		}
	})
	defer cancel()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "retry: 2000\n: vfsd events of session "+e.id+"\n\n")
	if err := rc.Flush(); err != nil {
		return nil
	}
	d.metrics.streams.Add(1)
	defer d.metrics.streams.Add(-1)
	tick := time.NewTicker(keepaliveEvery)
	defer tick.Stop()
	for {
		var werr error
		select {
		case <-r.Context().Done():
			return nil
		case <-d.stopping:
			writeSSE(w, api.EventClosed, "", map[string]string{"reason": "the daemon is stopping"})
			rc.Flush()
			return nil
		case <-e.done:
			writeSSE(w, api.EventClosed, "", map[string]string{"reason": "the session was closed (" + e.closeReason + ")"})
			rc.Flush()
			return nil
		case n := <-notices:
			if lost := dropped.Swap(0); lost > 0 {
				werr = writeSSE(w, api.EventLost, "", map[string]int64{"dropped": lost})
			}
			if werr == nil {
				werr = writeSSE(w, api.EventChange, fmt.Sprint(n.Seq), eventOf(n))
			}
		case <-tick.C:
			_, werr = io.WriteString(w, ": keepalive\n\n")
		}
		if werr != nil || rc.Flush() != nil {
			return nil // the reader went away
		}
	}
}

// eventOf describes a notice on the wire.
func eventOf(n vfs.Notice) api.Event {
	ev := api.Event{Seq: n.Seq, Op: string(n.Event.Op), Snapshot: n.Event.Snapshot, Origin: n.Origin}
	for _, c := range n.Event.Changes() {
		ev.Paths = append(ev.Paths, wirePath(c.Path))
	}
	return ev
}

// writeSSE writes one server-sent event; data is JSON on one line.
func writeSSE(w io.Writer, event, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	return err
}
