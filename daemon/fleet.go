package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/coord"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The fleet (docs/fleets.md): with a remote, each session this daemon
// creates is claimed in the bucket — an owner record {daemon, epoch,
// expires, head} written by compare-and-swap (package coord) — and renewed
// every lease/3; each background push of one of its snapshots moves the
// record's head by a conditional write carrying the epoch. A write refused
// because another daemon took the session, or was handed it, fences the
// session here: its tools answer code fenced, naming the owner. What it
// acknowledged stays: its snapshots are pushed (the head move is what is
// refused, not the upload), and its live state stays here, read-only.

// ownership is a session's standing in the fleet, as this daemon knows it.
type ownership struct {
	// calls: tool calls in flight hold it shared; a hand-off takes it
	// exclusively, so that no call acknowledged before the hand-off's
	// snapshot is left out of it.
	calls sync.RWMutex

	// writer serialises the writes of the owner record (claim, renewal,
	// head move, hand-off, release): held across the request, which may
	// wait on a slow remote. A call's gate waits for it a bounded time.
	once   sync.Once
	writer chan struct{}

	// mu guards the fields below; never held across a request.
	mu     sync.Mutex
	lease  *coord.Lease       // nil: not claimed (yet)
	fenced *coord.FencedError // set once another daemon owns it
	moving string             // a hand-off to this daemon is in progress
	claim  bool               // a claim is due (the remote failed at creation)
	// kept: the fenced copy's state is in the fleet (the hand-off's
	// snapshot, or preserveFenced's), so it may be replaced when the
	// session is handed back here.
	kept bool
	// recheck: until then, a lookup of the fenced copy does not ask the
	// fleet again whether the session was handed back.
	recheck time.Time
	// preserving: preserveFenced is at work (not guarded by mu).
	preserving atomic.Bool
	head       int64 // Record.Created of the head, in Unix ms
	// quiet: until then, calls do not renew the lease themselves (the
	// last try found the remote unreachable).
	quiet time.Time
}

// acquire takes o's writer, or fails when ctx ends first.
func (o *ownership) acquire(ctx context.Context) error {
	o.once.Do(func() { o.writer = make(chan struct{}, 1) })
	select {
	case o.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the owner record's writer: %w", ctx.Err())
	}
}

func (o *ownership) releaseWriter() { <-o.writer }

// snapshotState reads o's state.
func (o *ownership) state() (lease *coord.Lease, fenced *coord.FencedError, moving string, claim bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lease, o.fenced, o.moving, o.claim
}

// fleetMeta is what a session's metadata keeps of its ownership, so that a
// restart knows which epoch it held and whether it was fenced.
type fleetMeta struct {
	Epoch       uint64 `json:"epoch,omitempty"`
	FencedBy    string `json:"fenced_by,omitempty"`
	FencedEpoch uint64 `json:"fenced_epoch,omitempty"`
	// Kept: the fenced copy's state is in the fleet (ownership.kept).
	Kept bool `json:"kept,omitempty"`
}

var daemonNameRe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// fleetName returns the daemon's name in the fleet: Config.Name, else the
// one kept in DataDir/fleet-name, else a new one (host name and 4 random
// hex digits) kept there.
func (d *Daemon) fleetName() (string, error) {
	if d.cfg.Name != "" {
		if !coord.ValidName(d.cfg.Name) {
			return "", fmt.Errorf("--name %q: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", d.cfg.Name)
		}
		return d.cfg.Name, nil
	}
	path := filepath.Join(d.cfg.DataDir, "fleet-name")
	if b, err := os.ReadFile(path); err == nil {
		if n := strings.TrimSpace(string(b)); coord.ValidName(n) {
			return n, nil
		}
	}
	host, _ := os.Hostname()
	host = strings.Trim(daemonNameRe.ReplaceAllString(host, "-"), "-._")
	if len(host) > 40 {
		host = host[:40]
	}
	if host == "" {
		host = "vfsd"
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	n := host + "-" + hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(n+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the fleet name: %w", err)
	}
	return n, nil
}

// startFleet sets up the daemon's view of the fleet over b: the lease of
// each session whose metadata says this daemon owned it, and the loop that
// renews them and writes the daemon's heartbeat.
func (d *Daemon) startFleet(b coord.Backend) error {
	name, err := d.fleetName()
	if err != nil {
		return err
	}
	f, err := coord.New(b, name)
	if err != nil {
		return err
	}
	if d.cfg.FleetLease > 0 {
		f.Lease = d.cfg.FleetLease
	}
	if d.cfg.MaxClockSkew > 0 {
		f.Skew = d.cfg.MaxClockSkew
	}
	if f.Skew*3 >= f.Lease {
		return fmt.Errorf("--lease %v must be more than three times --max-clock-skew %v", f.Lease, f.Skew)
	}
	d.fleet = f
	d.started = time.Now()
	// Called while the daemon opens (recover): every session with
	// metadata is in d.sessions, none marked stored yet.
	for _, e := range d.sessions {
		e.mu.Lock()
		fm := e.meta.Fleet
		e.mu.Unlock()
		switch {
		case fm == nil:
			e.own.claim = true // created before the fleet, or without a remote
		case fm.FencedBy != "":
			e.own.fenced = &coord.FencedError{Session: e.id, Epoch: fm.Epoch,
				Owner: coord.Owner{Session: e.id, Daemon: fm.FencedBy, Epoch: fm.FencedEpoch}}
			e.own.kept = fm.Kept
		case fm.Epoch > 0:
			e.own.lease = coord.Resume(e.id, name, fm.Epoch)
		default:
			e.own.claim = true
		}
	}
	return nil
}

// startFleetLoop starts the fleet's loop, once the daemon is open (New):
// it lists the sessions, which recover is still filling in before that.
//
// Its first heartbeat is written before it returns (waiting at most
// fleetStartWait for the remote): a daemon that answers its socket is in
// the fleet's membership, so a hand-off to it right after it started is
// not refused as one to an unknown daemon.
func (d *Daemon) startFleetLoop() {
	if d.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetStartWait)
	owned := 0
	for _, e := range d.entries() {
		if e.owns() {
			owned++
		}
	}
	d.heartbeat(ctx, owned)
	cancel()
	d.bg.Add(1)
	go d.fleetLoop()
}

// fleetStartWait bounds the first heartbeat at startup: a remote that does
// not answer delays the daemon's start by at most this.
const fleetStartWait = 2 * time.Second

// fleetLoop writes the heartbeat and renews the leases every lease/3
// until the daemon stops.
func (d *Daemon) fleetLoop() {
	defer d.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-d.stopping; cancel() }()
	tick := time.NewTicker(d.fleet.Lease / 3)
	defer tick.Stop()
	for {
		d.fleetTick(ctx)
		select {
		case <-d.stopping:
			return
		case <-tick.C:
		}
	}
}

func (d *Daemon) fleetTick(ctx context.Context) {
	owned := 0
	for _, e := range d.entries() {
		if ctx.Err() != nil {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, d.fleet.Lease/3)
		if err := d.renew(rctx, e, false); err == nil && e.owns() {
			owned++
		}
		cancel()
	}
	hctx, cancel := context.WithTimeout(ctx, d.fleet.Lease/3)
	defer cancel()
	d.heartbeat(hctx, owned)
}

// heartbeat writes this daemon's membership record, saying it owns owned
// sessions; a failure is logged (the next tick tries again).
func (d *Daemon) heartbeat(ctx context.Context, owned int) {
	if err := d.fleet.Heartbeat(ctx, coord.Member{Started: d.started.UTC(), Version: d.cfg.Version, Sessions: owned}); err != nil && ctx.Err() == nil {
		d.log.Warn("fleet: heartbeat failed; the remote is unreachable", "err", err)
	}
}

// handBackDue reports whether e is a fenced copy for which the fleet is
// to be asked whether the session was handed back here: at each lookup
// (lookups at once share one question), except for a while after the
// remote did not answer (quietHandBack).
func (e *entry) handBackDue() bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	fe := e.own.fenced
	return fe != nil && !fe.Owner.Closed && !time.Now().Before(e.own.recheck)
}

// quietHandBack stops lookups of fenced copy e from asking the fleet for d.
func (e *entry) quietHandBack(d time.Duration) {
	e.own.mu.Lock()
	e.own.recheck = time.Now().Add(d)
	e.own.mu.Unlock()
}

// owns reports whether this daemon holds e's lease and is not fenced.
func (e *entry) owns() bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	return e.own.lease != nil && e.own.fenced == nil
}

// renew claims e if a claim is due, or renews its lease: always in the
// loop; from a call (sync) only when the lease is no longer valid by this
// daemon's clock. A refusal fences e. Other failures (the remote
// unreachable) are returned and change nothing.
func (d *Daemon) renew(ctx context.Context, e *entry, sync bool) error {
	o := &e.own
	if err := o.acquire(ctx); err != nil {
		return err
	}
	defer o.releaseWriter()
	lease, fenced, _, claim := o.state()
	if fenced != nil {
		return fencedErr(e.id, fenced, d.fleet.Daemon)
	}
	if claim {
		e.mu.Lock()
		settings := settingsOf(e.meta)
		e.mu.Unlock()
		l, err := d.fleet.Create(ctx, e.id, settings)
		o.mu.Lock()
		defer o.mu.Unlock()
		var owned *coord.OwnedError
		if errors.As(err, &owned) {
			// Another daemon claimed this ID while ours was unclaimed:
			// theirs counts (it was claimed); ours is fenced.
			return d.fenceLocked(e, &coord.FencedError{Session: e.id, Owner: owned.Owner})
		}
		if err != nil {
			return err
		}
		o.lease, o.claim = l, false
		return d.saveFleetMeta(e)
	}
	if lease == nil || sync && lease.Valid(d.fleet, time.Now()) {
		return nil
	}
	next := *lease
	err := d.fleet.Renew(ctx, &next)
	o.mu.Lock()
	defer o.mu.Unlock()
	var fe *coord.FencedError
	switch {
	case errors.As(err, &fe):
		return d.fenceLocked(e, fe)
	case err == nil:
		o.lease = &next
	}
	return err
}

// fenceLocked marks e fenced by fe (e.own.mu held) and keeps it in its
// metadata. It returns the fenced error callers see.
func (d *Daemon) fenceLocked(e *entry, fe *coord.FencedError) error {
	return d.fenceLockedKeep(e, fe, true)
}

// fenceLockedKeep is fenceLocked; keep preserves the session's state in
// the fleet (preserveFenced) — not after a hand-off, whose snapshot has it.
func (d *Daemon) fenceLockedKeep(e *entry, fe *coord.FencedError, keep bool) error {
	if e.own.fenced == nil {
		e.own.fenced = fe
		e.own.kept = !keep // a hand-off's snapshot holds it all
		if keep {
			d.preserveFenced(e, fe)
			d.log.Warn("fleet: session fenced: another daemon owns it now; its tools here answer 'fenced', and what it acknowledged is kept in the fleet",
				"session", e.id, "owner", fe.Owner.Daemon, "epoch", fe.Owner.Epoch, "held_epoch", fe.Epoch, "ref", FencedRef(e.id, d.fleet.Daemon, fe.Epoch))
		}
		if err := d.saveFleetMeta(e); err != nil {
			d.log.Warn("fleet: could not record the fence in the session's metadata", "session", e.id, "err", err)
		}
	}
	return fencedErr(e.id, e.own.fenced, d.fleet.Daemon)
}

// FencedRef is the ref under which a fenced session's state is kept in
// the fleet: fenced/SESSION/DAEMON-eEPOCH.
func FencedRef(session, daemon string, epoch uint64) string {
	return fmt.Sprintf("fenced/%s/%s-e%d", session, daemon, epoch)
}

// preserveFenced keeps, in the background, what a fenced session holds
// that its last pushed head may not — calls it acknowledged after its
// last push (a pause, a partition, a remote that was down): a snapshot of
// it, pushed, under the ref FencedRef. So every change the daemon
// acknowledged is in the fleet: in the session's head, or there.
//
// One runs at a time per session; it is called (fenceLocked) with e.own.mu
// held, and again (replaceFencedCopy) without.
func (d *Daemon) preserveFenced(e *entry, fe *coord.FencedError) {
	if !e.own.preserving.CompareAndSwap(false, true) {
		return
	}
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	select {
	case <-d.stopping:
		e.own.preserving.Store(false)
		return
	default:
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		defer e.own.preserving.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		go func() {
			select {
			case <-d.stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
		name := FencedRef(e.id, d.fleet.Daemon, fe.Epoch)
		err := d.open(e)
		var snap *api.Snapshot
		if err == nil {
			snap, err = d.snapshotSession(ctx, e, "fenced copy on "+d.fleet.Daemon, nil)
		}
		if err == nil {
			_, err = d.repo.Push(ctx, snap.ID)
		}
		if err == nil {
			d.afterPush(ctx, snap.ID)
			_, err = d.fleet.SetRef(ctx, name, snap.ID, nil)
		}
		if err != nil {
			d.log.Error("fleet: could not keep the fenced session's state in the fleet; it stays here, read-only", "session", e.id, "ref", name, "err", err)
			return
		}
		e.own.mu.Lock()
		e.own.kept = true
		if err := d.saveFleetMeta(e); err != nil {
			d.log.Warn("fleet: could not record in the session's metadata that its state is kept", "session", e.id, "err", err)
		}
		e.own.mu.Unlock()
		d.log.Info("fleet: the fenced session's state is kept in the fleet", "session", e.id, "ref", name, "snapshot", snap.ID)
	}()
}

// saveFleetMeta writes e's ownership into its metadata (e.own.mu held).
func (d *Daemon) saveFleetMeta(e *entry) error {
	fm := &fleetMeta{}
	if e.own.lease != nil {
		fm.Epoch = e.own.lease.Epoch
	}
	if fe := e.own.fenced; fe != nil {
		fm.Epoch, fm.FencedBy, fm.FencedEpoch, fm.Kept = fe.Epoch, fe.Owner.Daemon, fe.Owner.Epoch, e.own.kept
	}
	return d.updateMeta(e, func(m *sessionMeta) { m.Fleet = fm })
}

// fencedErr is the API error for a call on a fenced session.
func fencedErr(id string, fe *coord.FencedError, self string) error {
	if fe.Owner.Closed {
		return apiErr(api.CodeFenced, "session %s was closed in the fleet by daemon %s; its state here is kept read-only (close it with vfsd session close %s)", id, fe.Owner.Daemon, id)
	}
	if fe.Owner.Daemon == self {
		return apiErr(api.CodeFenced, "session %s was handed back to this daemon at epoch %d, but this copy (epoch %d) holds changes not yet kept in the fleet (ref %s): they are pushed once the remote answers, and then the fleet's head replaces this copy; retry in a moment (vfsd remote shows the remote's state)",
			id, fe.Owner.Epoch, fe.Epoch, FencedRef(id, self, fe.Epoch))
	}
	return apiErr(api.CodeFenced, "session %s is owned by daemon %s now (epoch %d; this daemon held epoch %d): call it there. Nothing acknowledged here is lost: this copy stays read-only, and its snapshots are in the remote (vfsd snapshot list)", id, fe.Owner.Daemon, fe.Owner.Epoch, fe.Epoch)
}

// fleetGate lets a call that changes or reads session e through: not when
// e is fenced or being handed off. A lease that ran out by this daemon's
// clock (a pause, a partition) is renewed first, which is how a daemon
// that was paused past its lease finds out that another took the session.
// A remote that cannot be reached does not stop the call (local work goes
// on; the head move of its pushes is what fencing guards).
func (d *Daemon) fleetGate(ctx context.Context, e *entry) error {
	if d.fleet == nil {
		return nil
	}
	e.own.mu.Lock()
	fenced, moving, lease, quiet := e.own.fenced, e.own.moving, e.own.lease, e.own.quiet
	e.own.mu.Unlock()
	if fenced != nil {
		return fencedErr(e.id, fenced, d.fleet.Daemon)
	}
	if moving != "" {
		return apiErr(api.CodeFenced, "session %s is being handed to daemon %s; call it there in a moment", e.id, moving)
	}
	now := time.Now()
	if lease == nil || lease.Valid(d.fleet, now) || now.Before(quiet) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, gateWait)
	defer cancel()
	if err := d.renew(rctx, e, true); err != nil {
		if errors.Is(err, &api.Error{Code: api.CodeFenced}) {
			return err
		}
		// Unreachable: calls go on without asking again for a while.
		e.own.mu.Lock()
		e.own.quiet = time.Now().Add(d.fleet.Lease / 3)
		e.own.mu.Unlock()
		d.log.Debug("fleet: lease not renewed; the call goes on", "session", e.id, "err", err)
	}
	return nil
}

// gateWait bounds how long a call waits for its lease's renewal (its own
// or one in flight) before it goes on without it.
const gateWait = 2 * time.Second

// enterCall is fleetGate for a tool call, which then holds e.own.calls
// shared until done is called: a hand-off waits for it.
func (d *Daemon) enterCall(ctx context.Context, e *entry) (done func(), err error) {
	if d.fleet == nil {
		return func() {}, nil
	}
	e.own.calls.RLock()
	if err := d.fleetGate(ctx, e); err != nil {
		e.own.calls.RUnlock()
		return nil, err
	}
	return e.own.calls.RUnlock, nil
}

// fleetSettings are the settings of a session its owner record carries
// (coord.Owner.Settings), so that a daemon adopting it after a hand-off or
// a takeover creates it alike: same policy, contract, profile, quota,
// label and followed ref. A contract's creation options are not carried:
// they were applied once, and the head snapshot holds what they made.
type fleetSettings struct {
	Policy       string          `json:"policy,omitempty"`
	PolicyObject json.RawMessage `json:"policy_object,omitempty"`
	Profile      string          `json:"profile,omitempty"`
	Contract     string          `json:"contract,omitempty"`
	Quota        *api.Quota      `json:"quota,omitempty"`
	Label        string          `json:"label,omitempty"`
	KeepRef      string          `json:"keep_ref,omitempty"`
}

// settingsOf returns m's fleetSettings, encoded.
func settingsOf(m *sessionMeta) json.RawMessage {
	fs := fleetSettings{Policy: m.Policy, PolicyObject: m.PolicyObject, Profile: m.Profile, Contract: m.Contract,
		Quota: m.Quota, Label: m.Label, KeepRef: m.KeepRef}
	if len(fs.PolicyObject) > 0 {
		fs.Policy = "" // its name only; the object is the policy
	}
	b, err := json.Marshal(fs)
	if err != nil {
		return nil
	}
	return b
}

// adoptRequest is the creation request of session id adopted from owner
// record o: from its head, with the settings it carries (a record written
// before settings travelled has none: the daemon's defaults).
func adoptRequest(id string, o coord.Owner) (api.CreateSessionRequest, error) {
	req := api.CreateSessionRequest{ID: id, Base: o.Head, Label: "from " + o.From}
	if len(o.Settings) == 0 {
		return req, nil
	}
	var fs fleetSettings
	if err := json.Unmarshal(o.Settings, &fs); err != nil {
		return req, fmt.Errorf("the settings in its owner record do not parse (%v); it is not set up with other settings than its own", err)
	}
	req.Policy, req.PolicyObject, req.Profile, req.Contract, req.Quota, req.KeepRef =
		fs.Policy, fs.PolicyObject, fs.Profile, fs.Contract, fs.Quota, fs.KeepRef
	if fs.Label != "" {
		req.Label = fs.Label
	}
	return req, nil
}

// claimNew claims session id for this daemon before it is created: an
// ID another daemon owns is refused (nothing is created). When the remote
// cannot be reached the session is created unclaimed and claimed by the
// fleet loop later.
func (d *Daemon) claimNew(ctx context.Context, id string, m *sessionMeta) (*coord.Lease, bool, error) {
	if d.fleet == nil {
		return nil, false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, gateWait)
	defer cancel()
	l, err := d.fleet.Create(cctx, id, settingsOf(m))
	var owned *coord.OwnedError
	switch {
	case errors.As(err, &owned):
		return nil, false, apiErr(api.CodeConflict, "%v: choose another id; or move it here (vfsd session move %s --to %s, on %s), or take it once its lease ends (vfsd session take %s)",
			owned, id, d.fleet.Daemon, owned.Owner.Daemon, id)
	case err != nil:
		d.log.Warn("fleet: could not claim the new session; it is claimed once the remote answers", "session", id, "err", err)
		return nil, true, nil
	}
	return l, false, nil
}

// installLease records a new session's claim (from claimNew or an
// adoption) in its entry and metadata.
func (d *Daemon) installLease(e *entry, l *coord.Lease, claim bool) {
	if d.fleet == nil {
		return
	}
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	e.own.lease, e.own.claim = l, claim
	if l != nil {
		if err := d.saveFleetMeta(e); err != nil {
			d.log.Warn("fleet: could not record the claim in the session's metadata", "session", e.id, "err", err)
		}
	}
}

// releaseClaim marks a closed session closed in the fleet (best effort: a
// record left behind is another daemon's to take once its lease ends).
func (d *Daemon) releaseClaim(e *entry) {
	if d.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if e.own.acquire(ctx) != nil {
		return
	}
	defer e.own.releaseWriter()
	lease, fenced, _, _ := e.own.state()
	if lease == nil || fenced != nil {
		return
	}
	next := *lease
	if err := d.fleet.Release(ctx, &next); err != nil {
		d.log.Warn("fleet: could not mark the closed session closed in the remote; another daemon may take it once its lease ends", "session", e.id, "err", err)
	}
}

// afterPush runs after a background push of snapshot id: the fleet's index
// names it, and when it is the newest snapshot of a session this daemon
// owns, the session's head moves to it (conditional on the record this
// daemon last wrote). A refusal fences the session; the snapshot stays in
// the remote, so nothing is lost.
func (d *Daemon) afterPush(ctx context.Context, id string) {
	if d.fleet == nil {
		return
	}
	snap, err := d.repo.Get(ctx, id)
	if err != nil {
		return
	}
	rec := snap.Record
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.fleet.Announce(actx, coord.SnapInfo{ID: id, Session: validOr(rec.Session), Label: rec.Label,
		Created: rec.CreatedAt(), Files: rec.Files, Bytes: rec.Bytes}); err != nil {
		d.log.Warn("fleet: could not add the snapshot to the fleet's index; other daemons find it by its full ID only", "snapshot", id, "err", err)
	}
	d.mu.RLock()
	e := d.sessions[rec.Session]
	d.mu.RUnlock()
	if e == nil || !e.took(rec) {
		return
	}
	d.moveHead(actx, e, id, rec.Created)
}

func validOr(s string) string {
	if coord.ValidName(s) {
		return s
	}
	return ""
}

// moveHead moves e's head to snapshot id, taken at created (Unix ms),
// unless the head is newer already.
func (d *Daemon) moveHead(ctx context.Context, e *entry, id string, created int64) {
	o := &e.own
	if o.acquire(ctx) != nil {
		return
	}
	defer o.releaseWriter()
	o.mu.Lock()
	lease, fenced, head := o.lease, o.fenced, o.head
	o.mu.Unlock()
	if lease == nil || fenced != nil || created < head {
		return
	}
	next := *lease
	err := d.fleet.MoveHead(ctx, &next, id)
	var keep string
	defer func() { // after o.mu is released: a request
		if keep == "" {
			return
		}
		// The ref follows the head; a failure leaves it where it was
		// until the next head move.
		if _, err := d.fleet.SetRef(ctx, keep, id, nil); err != nil {
			d.log.Warn("fleet: could not move the session's ref to its head", "session", e.id, "ref", keep, "err", err)
		}
	}()
	o.mu.Lock()
	defer o.mu.Unlock()
	var fe *coord.FencedError
	switch {
	case errors.As(err, &fe):
		_ = d.fenceLocked(e, fe)
		d.log.Warn("fleet: the session's head did not move here: it is fenced; the snapshot stays in the remote", "session", e.id, "snapshot", id)
	case err != nil:
		d.log.Warn("fleet: could not move the session's head; the next push tries again", "session", e.id, "snapshot", id, "err", err)
	default:
		o.lease, o.head = &next, created
		e.mu.Lock()
		keep = e.meta.KeepRef
		e.mu.Unlock()
	}
}

// ownerView is e's ownership for its API view; nil without a fleet.
func (d *Daemon) ownerView(e *entry) *api.SessionOwner {
	if d.fleet == nil {
		return nil
	}
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	e.mu.Lock()
	keep := e.meta.KeepRef
	e.mu.Unlock()
	v := &api.SessionOwner{Daemon: d.fleet.Daemon, Moving: e.own.moving, KeepRef: keep}
	if l := e.own.lease; l != nil {
		v.Epoch, v.Head = l.Epoch, l.Head
		if !l.Expires.IsZero() {
			t := l.Expires
			v.Expires = &t
		}
	}
	if fe := e.own.fenced; fe != nil {
		v.Fenced, v.Daemon, v.Epoch = true, fe.Owner.Daemon, fe.Owner.Epoch
	}
	return v
}

// crashPoint kills the daemon at once (SIGKILL) when VFSD_CRASH_AT names
// this step: the hand-off tests crash the sender and the receiver at each
// step of the protocol. Unset, it does nothing.
func crashPoint(step string) {
	if v := os.Getenv("VFSD_CRASH_AT"); v != "" && v == step {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill() // SIGKILL on Unix
		}
		time.Sleep(time.Minute) // the signal is on its way
	}
}

// noFleet is the error of fleet calls on a daemon without a remote.
func noFleet() error {
	return apiErr(api.CodeUnavailable, "this daemon has no remote, so no fleet; start vfsd serve with --remote s3://BUCKET/PREFIX?endpoint=HOST:PORT")
}

// snapshotPushed makes sure snapshot id is in the remote: pushed whole by
// this daemon already (no request), or pushed now when it is local. A
// snapshot this daemon only knows from the remote is there if its record
// is (one request): whoever pushed it uploaded the record last, and every
// read of it is verified against its hash. The report is nil when nothing
// was pushed.
func (d *Daemon) snapshotPushed(ctx context.Context, id string) (*snapshot.PushReport, error) {
	if d.repo.PushedWhole(id) {
		return nil, nil
	}
	h, err := vfs.ParseHash(id)
	if err != nil {
		return nil, apiErr(api.CodeInvalidInput, "snapshot %q: not an ID", id)
	}
	if _, err := d.store.Stat(ctx, snapshot.Records, h); errors.Is(err, vfs.ErrNotFound) {
		if _, err := d.repo.Remote().Stat(ctx, snapshot.Records, h); err == nil {
			return nil, nil
		}
	}
	rep, err := d.repo.Push(ctx, id)
	if err != nil {
		return nil, apiErr(api.CodeUnavailable, "push snapshot %s: %v; what was uploaded stays, so trying again sends only the rest", id[:12], err)
	}
	return &rep, nil
}
