package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Fleet is one daemon's view of the fleet's records in a Backend.
type Fleet struct {
	b Backend
	// Daemon is this daemon's name in the fleet.
	Daemon string
	// Lease is how long an owner record holds without renewal; owners
	// renew every Lease/3.
	Lease time.Duration
	// Skew is the most two daemons' clocks may disagree (plus the most a
	// request may take to reach the bucket): a taker waits Skew past a
	// lease's expiry, an owner stops counting on its lease Skew before.
	Skew time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Defaults of a Fleet.
const (
	DefaultLease = 30 * time.Second
	DefaultSkew  = 2 * time.Second
)

// New returns the fleet in b as daemon sees it, with the default lease and
// skew.
func New(b Backend, daemon string) (*Fleet, error) {
	if !ValidName(daemon) {
		return nil, fmt.Errorf("daemon name %q: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", daemon)
	}
	return &Fleet{b: b, Daemon: daemon, Lease: DefaultLease, Skew: DefaultSkew}, nil
}

// Backend returns the fleet's store.
func (f *Fleet) Backend() Backend { return f.b }

func (f *Fleet) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidName reports whether s may name a session or a daemon: 1-64
// letters, digits, '_', '.' or '-', starting with a letter or digit.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// Owner is a session's owner record (sessions/ID): who owns it, under
// which epoch, until when, and its head — the latest snapshot of it that
// its owner pushed.
type Owner struct {
	Session string `json:"session"`
	Daemon  string `json:"daemon"`
	// Epoch grows by one each time the session changes hands (a
	// hand-off, a takeover, a re-creation): a daemon holding a lower
	// epoch is fenced.
	Epoch uint64 `json:"epoch"`
	// Expires is the lease's end, by the writer's clock.
	Expires time.Time `json:"expires"`
	// Head is the session's latest pushed snapshot; "" before its first.
	Head string `json:"head,omitempty"`
	// Seq counts the record's writes: no two writes of it are equal, so
	// its version (an MD5 ETag on S3) never comes back.
	Seq uint64 `json:"seq"`
	// From is the daemon the session came from at its last change of
	// hands.
	From string `json:"from,omitempty"`
	// Closed marks a session closed by its owner: anyone may create it
	// anew (with the next epoch).
	Closed  bool      `json:"closed,omitempty"`
	Updated time.Time `json:"updated"`
	// Settings are the session's settings as its creator gave them
	// (opaque here: the daemon's policy, contract, profile, quota...), so
	// that a daemon adopting the session after a hand-off or a takeover
	// creates it alike. Set at the claim, carried by every later write.
	Settings json.RawMessage `json:"settings,omitempty"`

	// version is the backend's version of the record as read or written.
	version string
	// corrupt: the bucket holds something under the key that is no owner
	// record of this session (another tenant's, or garbage).
	corrupt bool
}

// Live reports whether the owner's lease still holds at now, as a daemon
// other than the owner must count it: until Skew past its expiry.
func (o Owner) Live(now time.Time, skew time.Duration) bool {
	return !o.Closed && !o.corrupt && now.Before(o.Expires.Add(skew))
}

// OwnedError is the refusal to create or take a session another daemon
// owns under a live lease.
type OwnedError struct{ Owner Owner }

func (e *OwnedError) Error() string {
	return fmt.Sprintf("session %s is owned by daemon %s (epoch %d, lease until %s)", e.Owner.Session, e.Owner.Daemon,
		e.Owner.Epoch, e.Owner.Expires.UTC().Format(time.RFC3339))
}

// FencedError is what an owner learns when its write is refused: the
// record has moved on to Owner (another daemon, or a later epoch).
type FencedError struct {
	Session string
	Epoch   uint64 // the epoch this daemon held
	Owner   Owner  // the record now
}

func (e *FencedError) Error() string {
	if e.Owner.Closed {
		return fmt.Sprintf("session %s was closed in the fleet by daemon %s (epoch %d); this daemon held epoch %d", e.Session, e.Owner.Daemon, e.Owner.Epoch, e.Epoch)
	}
	return fmt.Sprintf("session %s is now owned by daemon %s (epoch %d); this daemon held epoch %d and is fenced", e.Session, e.Owner.Daemon, e.Owner.Epoch, e.Epoch)
}

// Lease is an owner record this daemon holds, and since when by its own
// (monotonic) clock.
type Lease struct {
	Owner
	sent time.Time // when the write that set Owner.Expires was sent
}

// Valid reports whether the lease still holds at now by this daemon's
// clock: until Skew before its end, measured from when its last write was
// sent (so the write's own latency counts against it).
func (l *Lease) Valid(f *Fleet, now time.Time) bool {
	return now.Before(l.sent.Add(f.Lease - f.Skew))
}

// Resume is the lease of a session this daemon owned at epoch, as it
// remembers it (after a restart): its first renewal reads the record and
// tells whether it still holds.
func Resume(session, daemon string, epoch uint64) *Lease {
	return &Lease{Owner: Owner{Session: session, Daemon: daemon, Epoch: epoch}}
}

func sessionKey(id string) string { return "sessions/" + id }

// Get returns session id's owner record; an error matching ErrNotFound
// when it has none. A record that does not parse comes back with no error
// and Corrupt() true.
func (f *Fleet) Get(ctx context.Context, id string) (Owner, error) {
	if !ValidName(id) {
		return Owner{}, fmt.Errorf("session id %q: invalid", id)
	}
	it, err := f.b.Get(ctx, sessionKey(id))
	if errors.Is(err, ErrTooLarge) {
		return Owner{Session: id, version: it.Version, corrupt: true}, nil
	}
	if err != nil {
		return Owner{}, fmt.Errorf("owner of session %s: %w", id, err)
	}
	var o Owner
	if json.Unmarshal(it.Value, &o) != nil || o.Session != id || !ValidName(o.Daemon) || o.Epoch == 0 {
		return Owner{Session: id, version: it.Version, corrupt: true}, nil
	}
	o.version = it.Version
	return o, nil
}

// Corrupt reports whether the record read was not an owner record of its
// session (garbage, or another tenant's object).
func (o Owner) Corrupt() bool { return o.corrupt }

// write puts rec under its session's key on cond, returning the lease.
func (f *Fleet) write(ctx context.Context, rec Owner, cond Cond) (*Lease, error) {
	sent := f.now()
	rec.Expires = sent.Add(f.Lease).UTC()
	rec.Updated = sent.UTC()
	rec.Seq++
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	v, err := f.b.Put(ctx, sessionKey(rec.Session), b, cond)
	if err != nil {
		return nil, err
	}
	rec.version = v
	return &Lease{Owner: rec, sent: sent}, nil
}

// Create claims a new session id for this daemon: a new record at epoch
// 1, or the next epoch over a closed or unreadable record, or over one of
// this daemon's own (a session it lost locally). Another daemon's record
// fails with *OwnedError, whatever its lease: taking a session is Take's.
func (f *Fleet) Create(ctx context.Context, id string, settings json.RawMessage) (*Lease, error) {
	for range 8 {
		l, err := f.write(ctx, Owner{Session: id, Daemon: f.Daemon, Epoch: 1, Settings: settings}, Cond{Absent: true})
		if !errors.Is(err, ErrConflict) {
			return l, wrapOp("claim", id, err)
		}
		cur, err := f.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if !cur.corrupt && !cur.Closed && cur.Daemon != f.Daemon {
			return nil, &OwnedError{Owner: cur}
		}
		l, err = f.write(ctx, Owner{Session: id, Daemon: f.Daemon, Epoch: cur.Epoch + 1, Seq: cur.Seq, From: cur.Daemon, Settings: settings}, Cond{Match: cur.version})
		if !errors.Is(err, ErrConflict) {
			return l, wrapOp("claim", id, err)
		}
	}
	return nil, fmt.Errorf("claim session %s: the owner record kept changing; retry: %w", id, ErrConflict)
}

// Take makes this daemon the owner of session id, which another daemon
// owned, once that owner's lease has ended (Skew past its expiry, by this
// daemon's clock): the next epoch, the same head. A record already this
// daemon's comes back as it is (adopting a session handed to it). A live
// lease of another daemon fails with *OwnedError; no record, with
// ErrNotFound.
func (f *Fleet) Take(ctx context.Context, id string) (*Lease, error) {
	for range 8 {
		cur, err := f.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if cur.Closed {
			return nil, fmt.Errorf("take session %s: it was closed by daemon %s: %w", id, cur.Daemon, ErrNotFound)
		}
		if !cur.corrupt && cur.Daemon == f.Daemon {
			// Handed here, or ours already: renew it, which also tells
			// whether it is still ours.
			l := &Lease{Owner: cur}
			if err := f.Renew(ctx, l); err != nil {
				var fe *FencedError
				if errors.As(err, &fe) {
					continue
				}
				return nil, err
			}
			return l, nil
		}
		if cur.Live(f.now(), f.Skew) {
			return nil, &OwnedError{Owner: cur}
		}
		next := Owner{Session: id, Daemon: f.Daemon, Epoch: cur.Epoch + 1, Head: cur.Head, Seq: cur.Seq, From: cur.Daemon, Settings: cur.Settings}
		l, err := f.write(ctx, next, Cond{Match: cur.version})
		if !errors.Is(err, ErrConflict) {
			return l, wrapOp("take", id, err)
		}
	}
	return nil, fmt.Errorf("take session %s: the owner record kept changing; retry: %w", id, ErrConflict)
}

// update rewrites l's record with change applied, conditional on the
// version l holds. When that fails it reads the record: still this
// daemon's at l's epoch (a write of its own it lost track of) it tries
// again; unreadable (poisoned) it writes over it, keeping the epoch;
// another daemon's or a later epoch fails with *FencedError. On success l
// holds the new record.
func (f *Fleet) update(ctx context.Context, l *Lease, change func(*Owner)) error {
	for range 4 {
		next := l.Owner
		change(&next)
		cond := Cond{Match: l.version}
		if l.version == "" { // never read: compare against "absent", then read
			cond = Cond{Absent: true}
		}
		nl, err := f.write(ctx, next, cond)
		if err == nil {
			*l = *nl
			return nil
		}
		if !errors.Is(err, ErrConflict) {
			return wrapOp("update the owner record of", l.Session, err)
		}
		cur, err := f.Get(ctx, l.Session)
		switch {
		case errors.Is(err, ErrNotFound):
			// Deleted under us (not by the protocol, which never deletes
			// owner records): write it anew, as ours.
			nl, err := f.write(ctx, func() Owner { o := l.Owner; change(&o); return o }(), Cond{Absent: true})
			if err == nil {
				*l = *nl
				return nil
			}
			if !errors.Is(err, ErrConflict) {
				return wrapOp("update the owner record of", l.Session, err)
			}
			continue
		case err != nil:
			return err
		case cur.corrupt:
			l.version = cur.version // repair it: ours until shown otherwise
			l.Seq = max(l.Seq, cur.Seq)
			continue
		case cur.Daemon != f.Daemon || cur.Epoch != l.Epoch || cur.Closed:
			return &FencedError{Session: l.Session, Epoch: l.Epoch, Owner: cur}
		}
		l.version, l.Seq = cur.version, cur.Seq
		l.Head = cur.Head
		if len(l.Settings) == 0 { // a lease resumed after a restart
			l.Settings = cur.Settings
		}
	}
	return fmt.Errorf("update the owner record of session %s: it kept changing; retry: %w", l.Session, ErrConflict)
}

// Renew extends l's lease by a conditional write; *FencedError when the
// session is no longer this daemon's.
func (f *Fleet) Renew(ctx context.Context, l *Lease) error {
	return f.update(ctx, l, func(*Owner) {})
}

// MoveHead sets l's session head to snapshot id (and renews the lease);
// *FencedError when the session is no longer this daemon's.
func (f *Fleet) MoveHead(ctx context.Context, l *Lease, id string) error {
	return f.update(ctx, l, func(o *Owner) { o.Head = id })
}

// Handoff gives l's session to daemon to at the next epoch with head id.
// Once it returns nil this daemon is fenced (l holds the new record); on
// *FencedError the session was not this daemon's to give.
func (f *Fleet) Handoff(ctx context.Context, l *Lease, to, id string) error {
	if !ValidName(to) {
		return fmt.Errorf("hand off session %s: daemon name %q is invalid", l.Session, to)
	}
	return f.update(ctx, l, func(o *Owner) { o.Daemon, o.Epoch, o.Head, o.From = to, l.Epoch+1, id, f.Daemon })
}

// Release marks l's session closed in the fleet.
func (f *Fleet) Release(ctx context.Context, l *Lease) error {
	return f.update(ctx, l, func(o *Owner) { o.Closed = true })
}

func wrapOp(op, id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s session %s: %w", op, id, err)
}

// boundedList lists keys under prefix, at most max of them, returning
// whether more were left.
func (f *Fleet) boundedList(ctx context.Context, prefix string, max int, fn func(rest string) error) (bool, error) {
	n := 0
	errMore := errors.New("more")
	err := f.b.List(ctx, prefix, func(k string) error {
		if n >= max {
			return errMore
		}
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			return nil
		}
		n++
		return fn(rest)
	})
	if errors.Is(err, errMore) {
		return true, nil
	}
	return false, err
}
