package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vfsd/vfsd/api"
)

// EventStream reads a session's server-sent events.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// StreamEvent is one event of the stream: its name (api.EventChange,
// api.EventLost, api.EventClosed) and its data.
type StreamEvent struct {
	Name string
	// Change is set for api.EventChange.
	Change *api.Event
	// Data is the event's raw data.
	Data json.RawMessage
}

// Events opens a session's event stream (GET /v1/sessions/{id}/events).
// The stream starts from the present; close it when done.
func (c *Client) Events(ctx context.Context, session string) (*EventStream, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + esc(session) + "/events"})
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &EventStream{body: resp.Body, sc: sc}, nil
}

// Next returns the next event; io.EOF when the stream ended (after a
// "closed" event, or when the daemon went away).
func (s *EventStream) Next() (*StreamEvent, error) {
	ev := &StreamEvent{}
	var data strings.Builder
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.Name == "" && data.Len() == 0 {
				continue // a comment or retry block
			}
			if ev.Name == "" {
				ev.Name = "message"
			}
			ev.Data = json.RawMessage(data.String())
			if ev.Name == api.EventChange {
				ev.Change = &api.Event{}
				if err := json.Unmarshal(ev.Data, ev.Change); err != nil {
					return nil, fmt.Errorf("events: decode a change: %w", err)
				}
			}
			return ev, nil
		case strings.HasPrefix(line, "event:"):
			ev.Name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := s.sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

func decodeJSON(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the response: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}
