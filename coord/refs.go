package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
)

// Ref is a named, mutable pointer to a snapshot, shared by the fleet
// (refs/NAME).
type Ref struct {
	Name     string    `json:"name"`
	Snapshot string    `json:"snapshot"`
	Seq      uint64    `json:"seq"` // moves so far: every move of a ref is counted, none lost
	Updated  time.Time `json:"updated"`
	By       string    `json:"by"` // the daemon that moved it last
	// History holds the ref's previous snapshots, newest first, at most
	// RefHistory of them.
	History []string `json:"history,omitempty"`

	version string
}

// RefHistory is how many previous targets a ref remembers.
const RefHistory = 8

var refRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`)
var hexRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidRef reports whether s may name a ref: up to 128 characters of
// letters, digits, '_', '.', '-' in '/'-separated parts, each starting with
// a letter or digit.
func ValidRef(s string) bool { return len(s) <= 128 && refRe.MatchString(s) }

// ErrRefMoved is the refusal of a conditional ref move (SetRef with
// expect) whose ref points elsewhere.
var ErrRefMoved = errors.New("the ref points at another snapshot")

// ErrBadRef is the error for a ref name or a snapshot ID that is not
// valid.
var ErrBadRef = errors.New("invalid ref")

// refTries bounds SetRef's compare-and-swap retries.
const refTries = 32

func refKey(name string) string { return "refs/" + name }

// GetRef returns ref name; an error matching ErrNotFound if it does not
// exist (or the bucket holds something else under its key).
func (f *Fleet) GetRef(ctx context.Context, name string) (Ref, error) {
	if !ValidRef(name) {
		return Ref{}, fmt.Errorf("ref %q: %w: use letters, digits, '_', '.', '-' and '/' (128 at most)", name, ErrBadRef)
	}
	it, err := f.b.Get(ctx, refKey(name))
	if errors.Is(err, ErrTooLarge) {
		return Ref{version: it.Version}, fmt.Errorf("ref %s: unreadable: %w", name, ErrNotFound)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("ref %s: %w", name, err)
	}
	r, ok := parseRef(name, it.Value)
	r.version = it.Version
	if !ok {
		return r, fmt.Errorf("ref %s: unreadable: %w", name, ErrNotFound)
	}
	return r, nil
}

func parseRef(name string, b []byte) (Ref, bool) {
	var r Ref
	if json.Unmarshal(b, &r) != nil || r.Name != name || !hexRe.MatchString(r.Snapshot) {
		return Ref{}, false
	}
	if len(r.History) > RefHistory {
		r.History = r.History[:RefHistory]
	}
	return r, true
}

// SetRef points ref name at snapshot snap (a full ID), by compare-and-swap
// on the version read, retrying (with jittered pauses) when another mover
// got there first — S3's 412, and its 409 for a conditional write racing
// another. With expect non-nil the move happens only while the ref points
// at *expect ("" for a ref that must not exist yet), else ErrRefMoved.
// An unreadable object under the ref's key is replaced.
func (f *Fleet) SetRef(ctx context.Context, name, snap string, expect *string) (Ref, error) {
	if !ValidRef(name) {
		return Ref{}, fmt.Errorf("ref %q: %w: use letters, digits, '_', '.', '-' and '/' (128 at most)", name, ErrBadRef)
	}
	if !hexRe.MatchString(snap) {
		return Ref{}, fmt.Errorf("ref %s: snapshot %q: %w: want a full snapshot ID", name, snap, ErrBadRef)
	}
	pause := 2 * time.Millisecond
	for try := 0; try < refTries; try++ {
		cur, err := f.GetRef(ctx, name)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Ref{}, err
		}
		if expect != nil && (exists && cur.Snapshot != *expect || !exists && *expect != "") {
			return cur, fmt.Errorf("ref %s points at %q, not %q: %w", name, cur.Snapshot, *expect, ErrRefMoved)
		}
		next := Ref{Name: name, Snapshot: snap, Seq: cur.Seq + 1, Updated: f.now().UTC(), By: f.Daemon}
		if exists {
			next.History = append([]string{cur.Snapshot}, cur.History...)
			if len(next.History) > RefHistory {
				next.History = next.History[:RefHistory]
			}
		}
		b, err := json.Marshal(next)
		if err != nil {
			return Ref{}, err
		}
		cond := Cond{Absent: true}
		if cur.version != "" {
			cond = Cond{Match: cur.version}
		}
		v, err := f.b.Put(ctx, refKey(name), b, cond)
		if err == nil {
			next.version = v
			return next, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Ref{}, fmt.Errorf("set ref %s: %w", name, err)
		}
		// Lost the race: read again after a pause, jittered so that
		// movers do not collide in step.
		select {
		case <-ctx.Done():
			return Ref{}, fmt.Errorf("set ref %s: %w", name, ctx.Err())
		case <-time.After(pause/2 + rand.N(pause)):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
	return Ref{}, fmt.Errorf("set ref %s: %d movers in a row got there first; retry: %w", name, refTries, ErrConflict)
}

// DeleteRef removes ref name; ErrNotFound if it does not exist.
func (f *Fleet) DeleteRef(ctx context.Context, name string) error {
	if _, err := f.GetRef(ctx, name); err != nil && !strings.Contains(err.Error(), "unreadable") {
		return err
	}
	if err := f.b.Delete(ctx, refKey(name)); err != nil {
		return fmt.Errorf("delete ref %s: %w", name, err)
	}
	return nil
}

// ListRefs returns the fleet's refs in name order, at most max (and
// whether more were left). Keys that are not refs, and refs that do not
// parse, are skipped: the bucket's other tenants may write anything.
func (f *Fleet) ListRefs(ctx context.Context, max int) ([]Ref, bool, error) {
	var names []string
	more, err := f.boundedList(ctx, "refs/", max, func(name string) error {
		if ValidRef(name) {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list refs: %w", err)
	}
	out := make([]Ref, 0, len(names))
	for _, n := range names {
		r, err := f.GetRef(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, r)
	}
	return out, more, nil
}
