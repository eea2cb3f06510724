package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/daemon"
)

// keepaliveEvery is how often an idle event stream sends a comment, so
// proxies and clients see the connection alive.
const keepaliveEvery = 15 * time.Second

// handleEvents streams a session's change notices as server-sent events:
// "change" events (data: api.Event, id: the journal sequence number) from
// the moment of the request on, "lost" when the reader fell behind, and a
// last "closed" event when the session or the daemon goes away. There is
// no replay: a reconnecting reader starts from the present.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.d.Subscribe(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "retry: 2000\n: vfsd events of session "+sub.Session+"\n\n")
	if err := rc.Flush(); err != nil {
		return nil
	}
	tick := time.NewTicker(keepaliveEvery)
	defer tick.Stop()
	for {
		var werr error
		select {
		case <-r.Context().Done():
			return nil
		case <-sub.Done():
			writeSSE(w, api.EventClosed, "", map[string]string{"reason": sub.Reason()})
			rc.Flush()
			return nil
		case n := <-sub.Changes:
			if lost := sub.Lost(); lost > 0 {
				werr = writeSSE(w, api.EventLost, "", map[string]int64{"dropped": lost})
			}
			if werr == nil {
				werr = writeSSE(w, api.EventChange, fmt.Sprint(n.Seq), daemon.EventOf(n))
			}
		case <-tick.C:
			_, werr = io.WriteString(w, ": keepalive\n\n")
		}
		if werr != nil || rc.Flush() != nil {
			return nil // the reader went away
		}
	}
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
