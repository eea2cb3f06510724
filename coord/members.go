package coord

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Member is a daemon's membership record (daemons/NAME), rewritten at
// every heartbeat.
type Member struct {
	Name      string    `json:"name"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Version   string    `json:"version,omitempty"`
	Sessions  int       `json:"sessions"` // sessions it owns
	Seq       uint64    `json:"seq"`
}

// Heartbeat writes this daemon's membership record.
func (f *Fleet) Heartbeat(ctx context.Context, m Member) error {
	m.Name, m.Heartbeat = f.Daemon, f.now().UTC()
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := f.b.Put(ctx, "daemons/"+f.Daemon, b, Cond{}); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Members returns the daemons that ever wrote a heartbeat, in name order,
// at most max; unreadable records are skipped.
func (f *Fleet) Members(ctx context.Context, max int) ([]Member, bool, error) {
	var names []string
	more, err := f.boundedList(ctx, "daemons/", max, func(n string) error {
		if ValidName(n) {
			names = append(names, n)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list daemons: %w", err)
	}
	var out []Member
	for _, n := range names {
		it, err := f.b.Get(ctx, "daemons/"+n)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrTooLarge) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		var m Member
		if json.Unmarshal(it.Value, &m) != nil || m.Name != n {
			continue
		}
		out = append(out, m)
	}
	return out, more, nil
}

// Member returns the membership record of the daemon named name:
// ErrNotFound when it never wrote a heartbeat (or its record does not
// parse, or names another daemon).
func (f *Fleet) Member(ctx context.Context, name string) (Member, error) {
	if !ValidName(name) {
		return Member{}, fmt.Errorf("daemon %q: %w", name, ErrNotFound)
	}
	it, err := f.b.Get(ctx, "daemons/"+name)
	if errors.Is(err, ErrTooLarge) {
		err = ErrNotFound
	}
	if err != nil {
		return Member{}, fmt.Errorf("daemon %s: %w", name, err)
	}
	var m Member
	if json.Unmarshal(it.Value, &m) != nil || m.Name != name {
		return Member{}, fmt.Errorf("daemon %s: an unreadable membership record: %w", name, ErrNotFound)
	}
	return m, nil
}

// SnapInfo is the fleet's index entry of a pushed snapshot: which daemon
// pushed it, of which session. The snapshot's record in the bucket is the
// truth (verified by its hash when fetched); the index only names and
// describes it, so that a listing is one request per thousand snapshots.
type SnapInfo struct {
	ID      string    `json:"-"`
	Daemon  string    `json:"d"`
	Session string    `json:"s,omitempty"`
	Label   string    `json:"l,omitempty"`
	Created time.Time `json:"c"`
	Files   int64     `json:"f"`
	Bytes   int64     `json:"b"`
}

// maxIndexLabel bounds the label an index key carries (a key is at most
// 1,024 bytes in S3).
const maxIndexLabel = 96

// Announce adds snapshot s to the fleet's index: an empty object whose
// key (snaps/ID/META) carries its description, written only if absent
// (the first pusher's stays).
func (f *Fleet) Announce(ctx context.Context, s SnapInfo) error {
	if !hexRe.MatchString(s.ID) {
		return fmt.Errorf("announce snapshot %q: not a snapshot ID", s.ID)
	}
	if len(s.Label) > maxIndexLabel {
		s.Label = s.Label[:maxIndexLabel]
		for !utf8Valid(s.Label) {
			s.Label = s.Label[:len(s.Label)-1]
		}
	}
	s.Daemon = f.Daemon
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	key := "snaps/" + s.ID + "/" + base64.RawURLEncoding.EncodeToString(b)
	if _, err := f.b.Put(ctx, key, nil, Cond{Absent: true}); err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("announce snapshot %s: %w", s.ID[:12], err)
	}
	return nil
}

// Snapshots lists the fleet's index of pushed snapshots (in ID order, one
// entry per ID), at most max, and whether more were left. prefix, when not
// "", keeps the IDs starting with it (one listing request per thousand of
// those). Entries that do not parse are skipped.
func (f *Fleet) Snapshots(ctx context.Context, prefix string, max int) ([]SnapInfo, bool, error) {
	var out []SnapInfo
	more, err := f.boundedList(ctx, "snaps/"+prefix, max, func(rest string) error {
		id, meta, ok := strings.Cut(prefix+rest, "/")
		if !ok || !hexRe.MatchString(id) || len(meta) > 1024 {
			return nil
		}
		if n := len(out); n > 0 && out[n-1].ID == id {
			return nil
		}
		b, err := base64.RawURLEncoding.DecodeString(meta)
		if err != nil {
			return nil
		}
		var s SnapInfo
		if json.Unmarshal(b, &s) != nil || !ValidName(s.Daemon) || s.Session != "" && !ValidName(s.Session) {
			return nil
		}
		s.ID = id
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list the fleet's snapshots: %w", err)
	}
	return out, more, nil
}

// Owners lists the owner records (at most max), in session order;
// unreadable ones are skipped.
func (f *Fleet) Owners(ctx context.Context, max int) ([]Owner, bool, error) {
	var ids []string
	more, err := f.boundedList(ctx, "sessions/", max, func(id string) error {
		if ValidName(id) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list owner records: %w", err)
	}
	var out []Owner
	for _, id := range ids {
		o, err := f.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if !o.corrupt {
			out = append(out, o)
		}
	}
	return out, more, nil
}
