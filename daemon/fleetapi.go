package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/coord"
)

// Bounds of the fleet's listings: the bucket is shared with tenants that
// may write any number of keys.
const (
	maxFleetList  = 10_000
	maxFleetMatch = 100
	// fleetListWait bounds how long a listing or a prefix's resolution
	// waits for the fleet's index before answering with local ones only.
	fleetListWait = 5 * time.Second
)

// FleetName is this daemon's name in the fleet; "" without a remote.
func (d *Daemon) FleetName() string {
	if d.fleet == nil {
		return ""
	}
	return d.fleet.Daemon
}

// MoveSession hands session id to daemon req.To: the session is frozen
// (calls in flight finish, new ones are refused), snapshotted, pushed,
// and its owner record is rewritten by compare-and-swap to name To at the
// next epoch with that snapshot as head. The receiver forks it (lazily)
// on its first call. This daemon's copy is fenced from then on. A crash
// at any step leaves exactly one owner: this daemon before the
// compare-and-swap, To after it, with every acknowledged change in the
// head either way (see docs/fleets.md).
func (d *Daemon) MoveSession(ctx context.Context, id string, req api.MoveRequest) (*api.MoveReport, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	to := strings.TrimSpace(req.To)
	if !coord.ValidName(to) {
		return nil, apiErr(api.CodeInvalidInput, "move session %s: give the receiving daemon's fleet name with --to (vfsd daemon list shows them)", id)
	}
	if to == d.fleet.Daemon {
		return nil, apiErr(api.CodeInvalidInput, "move session %s: %s is this daemon", id, to)
	}
	e, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	if err := d.checkReceiver(ctx, id, to); err != nil {
		return nil, err
	}
	e.mu.Lock()
	mounted := len(e.fuse) > 0
	e.mu.Unlock()
	if mounted {
		return nil, apiErr(api.CodeConflict, "session %s is mounted: programs may write it behind the daemon's back; unmount it first (vfsd unmount %s)", id, id)
	}
	rep := &api.MoveReport{Session: id, From: d.fleet.Daemon, To: to, Ms: map[string]float64{}}
	lap := time.Now()
	step := func(name string) {
		rep.Ms[name] = float64(time.Since(lap).Microseconds()) / 1000
		lap = time.Now()
	}
	// Freeze: wait for the calls in flight, then refuse new ones.
	e.own.calls.Lock()
	e.own.mu.Lock()
	switch {
	case e.own.fenced != nil:
		e.own.mu.Unlock()
		e.own.calls.Unlock()
		return nil, fencedErr(id, e.own.fenced, d.fleet.Daemon)
	case e.own.moving != "":
		e.own.mu.Unlock()
		e.own.calls.Unlock()
		return nil, apiErr(api.CodeConflict, "session %s is being moved to %s already", id, e.own.moving)
	case e.own.lease == nil:
		e.own.mu.Unlock()
		e.own.calls.Unlock()
		return nil, apiErr(api.CodeUnavailable, "session %s is not claimed in the fleet yet (the remote was unreachable); retry once it answers", id)
	}
	e.own.moving = to
	e.own.mu.Unlock()
	e.own.calls.Unlock()
	moved := false
	defer func() {
		if !moved {
			e.own.mu.Lock()
			e.own.moving = ""
			e.own.mu.Unlock()
		}
	}()
	step("freeze")
	crashPoint("move:frozen")
	snap, err := d.snapshotSession(ctx, e, "hand-off to "+to, nil)
	if err != nil {
		return nil, fmt.Errorf("move session %s: snapshot: %w", id, err)
	}
	rep.Snapshot = snap.ID
	step("snapshot")
	crashPoint("move:snapshotted")
	// The snapshot was just taken: pushed here and now, whatever the
	// background queue did meanwhile.
	prep, err := d.repo.Push(ctx, snap.ID)
	if err != nil {
		return nil, apiErr(api.CodeUnavailable, "move session %s: push snapshot %s: %v; the session stays here; retry", id, snap.ID[:12], err)
	}
	rep.Push = apiPushReport(prep)
	d.afterPush(ctx, snap.ID) // the index names it; the head moves to it
	step("push")
	crashPoint("move:pushed")
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.own.acquire(hctx); err != nil {
		return nil, apiErr(api.CodeUnavailable, "move session %s: %v; the session stays here; retry", id, err)
	}
	defer e.own.releaseWriter()
	cur, _, _, _ := e.own.state()
	l := &coord.Lease{}
	*l = *cur
	held := l.Epoch
	err = d.fleet.Handoff(hctx, l, to, snap.ID)
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	var fe *coord.FencedError
	switch {
	case errors.As(err, &fe) && fe.Owner.Daemon == to && fe.Owner.Head == snap.ID && fe.Owner.Epoch == held+1:
		// Our own write went through and its answer was lost.
		*l = coord.Lease{Owner: fe.Owner}
	case errors.As(err, &fe):
		return nil, d.fenceLocked(e, fe)
	case err != nil:
		// The answer is unknown: read what the record says.
		if o, gerr := d.fleet.Get(hctx, id); gerr == nil && o.Daemon == to && o.Head == snap.ID && o.Epoch == held+1 {
			*l = coord.Lease{Owner: o}
			break
		}
		return nil, apiErr(api.CodeUnavailable, "move session %s: hand the owner record to %s: %v; the session stays here (nothing changed hands); retry", id, to, err)
	}
	moved = true
	e.own.moving, e.own.lease = "", l
	_ = d.fenceLockedKeep(e, &coord.FencedError{Session: id, Epoch: held, Owner: l.Owner}, false)
	rep.Epoch = l.Epoch
	step("handoff")
	crashPoint("move:handed")
	d.log.Info("fleet: session handed off", "session", id, "to", to, "epoch", l.Epoch, "snapshot", snap.ID)
	return rep, nil
}

// adoptKey is the context key of a lease an adoption hands createSession.
type adoptKey struct{}

// adoptCall is an adoption in flight, shared by the lookups that wait
// for it.
type adoptCall struct {
	done chan struct{}
	err  error
}

// adopt creates session id here from the fleet's head when the fleet says
// this daemon owns it (handed here, or taken over): the receiver's side
// of a hand-off, run by the first call that names the session.
func (d *Daemon) adopt(id string) error {
	if d.fleet == nil || !coord.ValidName(id) {
		return errNotAdopted
	}
	d.adoptMu.Lock()
	if d.adopting == nil {
		d.adopting = map[string]*adoptCall{}
	}
	c := d.adopting[id]
	if c == nil {
		c = &adoptCall{done: make(chan struct{})}
		d.adopting[id] = c
		d.adoptMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c.err = d.adoptNow(ctx, id, nil)
		cancel()
		d.adoptMu.Lock()
		delete(d.adopting, id)
		d.adoptMu.Unlock()
		close(c.done)
	} else {
		d.adoptMu.Unlock()
		<-c.done
	}
	return c.err
}

var errNotAdopted = errors.New("not this daemon's in the fleet")

// errFleetUnasked: the fleet could not be asked (the remote did not answer
// in time).
var errFleetUnasked = errors.New("the fleet did not answer")

// replaceFencedCopy makes room for an adoption of session id, whose owner
// record o names this daemon: a copy here that was fenced at an earlier
// epoch (the session went to another daemon and was handed back, A→B→A)
// is closed, so that the adoption starts from the fleet's head, which has
// what the other daemon did. Its snapshots stay. A copy whose state is not
// yet kept in the fleet (a takeover fenced it and the push of what it held
// has not succeeded) is not closed: nothing it acknowledged may be lost.
// A copy that is this daemon's own (not fenced) is no adoption at all.
func (d *Daemon) replaceFencedCopy(id string, o coord.Owner) error {
	d.mu.RLock()
	e := d.sessions[id]
	d.mu.RUnlock()
	if e == nil {
		return nil
	}
	e.own.mu.Lock()
	fenced, kept := e.own.fenced, e.own.kept
	e.own.mu.Unlock()
	switch {
	case fenced == nil || o.Epoch <= fenced.Epoch:
		return errNotAdopted
	case !kept:
		// Its calls now say so (fencedErr), and the push of what it holds
		// is tried again: the copy is replaced at a lookup after it.
		e.own.mu.Lock()
		back := *e.own.fenced
		back.Owner = o
		e.own.fenced = &back
		e.own.mu.Unlock()
		d.preserveFenced(e, fenced)
		return fmt.Errorf("session %s was handed back to this daemon, but the copy fenced here holds changes not yet kept in the fleet (under ref %s); it is replaced once they are (the remote must answer)",
			id, FencedRef(id, d.fleet.Daemon, fenced.Epoch))
	}
	if err := d.dropFencedCopy(id, "handed back to this daemon"); err != nil {
		return err
	}
	d.log.Info("fleet: session handed back; the fenced copy is replaced by the fleet's head", "session", id, "epoch", o.Epoch, "head", o.Head, "fenced_epoch", fenced.Epoch)
	return nil
}

// dropFencedCopy closes the fenced copy of session id, its state kept in
// the fleet, so that an adoption replaces it with the fleet's head (why
// says how the session came back here); its snapshots stay.
func (d *Daemon) dropFencedCopy(id, why string) error {
	err := d.closeSessionPurge(id, why+": replaced by the fleet's head", false)
	if err != nil && !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
		return fmt.Errorf("close the fenced copy of session %s: %w", id, err)
	}
	return nil
}

// adoptNow is adopt's work: l, when not nil, is a lease Take already got.
func (d *Daemon) adoptNow(ctx context.Context, id string, l *coord.Lease) error {
	if l == nil {
		// Bounded: a lookup of an unknown ID must not wait long on a
		// remote that does not answer.
		gctx, cancel := context.WithTimeout(ctx, gateWait)
		o, err := d.fleet.Get(gctx, id)
		cancel()
		if err != nil && !errors.Is(err, coord.ErrNotFound) {
			return fmt.Errorf("%w: %w: %v", errNotAdopted, errFleetUnasked, err)
		}
		if err != nil || o.Corrupt() || o.Closed || o.Daemon != d.fleet.Daemon {
			return errNotAdopted
		}
		if err := d.replaceFencedCopy(id, o); err != nil {
			return err
		}
		crashPoint("adopt:read")
		if l, err = d.fleet.Take(ctx, id); err != nil {
			return fmt.Errorf("adopt session %s: %w", id, err)
		}
	}
	req, err := adoptRequest(id, l.Owner)
	if err != nil {
		return fmt.Errorf("adopt session %s: %w", id, err)
	}
	actx := context.WithValue(WithCaller(ctx, Caller{Admin: true}), adoptKey{}, l)
	if _, err := d.createSession(actx, req, Caller{Admin: true}, nil); err != nil {
		return fmt.Errorf("adopt session %s from snapshot %s: %w", id, l.Head, err)
	}
	crashPoint("adopt:forked")
	d.log.Info("fleet: session adopted", "session", id, "epoch", l.Epoch, "head", l.Head, "from", l.From)
	return nil
}

// TakeSession makes this daemon the owner of session id, another daemon's
// in the fleet, once that daemon's lease has ended (it crashed, or is
// paused or cut off): the next epoch, from the session's head. The old
// owner, should it come back, is fenced at its next write. A live lease
// is refused with conflict (move it instead).
func (d *Daemon) TakeSession(ctx context.Context, id string) (*api.Session, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	if !coord.ValidName(id) {
		return nil, apiErr(api.CodeInvalidInput, "session id %q is invalid", id)
	}
	d.mu.RLock()
	e := d.sessions[id]
	d.mu.RUnlock()
	if e != nil {
		if e.owns() {
			v := d.view(e)
			return &v, nil
		}
		e.own.mu.Lock()
		kept := e.own.kept
		e.own.mu.Unlock()
		if !kept {
			return nil, apiErr(api.CodeConflict, "a fenced copy of session %s is here, holding changes not yet kept in the fleet (its push has not succeeded); retry once the remote answers, or close the copy (vfsd session close %s) to give them up", id, id)
		}
	}
	l, err := d.fleet.Take(ctx, id)
	var owned *coord.OwnedError
	switch {
	case errors.As(err, &owned):
		return nil, apiErr(api.CodeConflict, "%v: its owner is alive; ask it to hand the session over (vfsd session move %s --to %s, on %s), or wait until the lease ends", owned, id, d.fleet.Daemon, owned.Owner.Daemon)
	case errors.Is(err, coord.ErrNotFound):
		return nil, apiErr(api.CodeNotFound, "no session %q in the fleet; vfsd session list on its daemon shows it", id)
	case err != nil:
		return nil, apiErr(api.CodeUnavailable, "take session %s: %v", id, err)
	}
	if e != nil {
		// The fenced copy left here, its state kept in the fleet: the
		// fleet's head replaces it.
		if err := d.dropFencedCopy(id, "taken over by this daemon"); err != nil {
			return nil, err
		}
	}
	if err := d.adoptNow(ctx, id, l); err != nil {
		return nil, err
	}
	e, err = d.lookup(id)
	if err != nil {
		return nil, err
	}
	v := d.view(e)
	return &v, nil
}

// refErr maps the fleet's ref errors to the API's.
func refErr(err error) error {
	switch {
	case errors.Is(err, coord.ErrBadRef):
		return apiErr(api.CodeInvalidInput, "%v", err)
	case errors.Is(err, coord.ErrRefMoved):
		return apiErr(api.CodeConflict, "%v; read it again (vfsd ref list) and retry", err)
	case errors.Is(err, coord.ErrNotFound):
		return apiErr(api.CodeNotFound, "%v; list the refs with vfsd ref list", err)
	case errors.Is(err, coord.ErrConflict):
		return apiErr(api.CodeConflict, "%v", err)
	}
	return apiErr(api.CodeUnavailable, "%v", err)
}

func refView(r coord.Ref) api.Ref {
	return api.Ref{Name: r.Name, Snapshot: r.Snapshot, Seq: r.Seq, Updated: r.Updated, By: r.By, History: r.History}
}

// SetRef points ref name at a snapshot (an ID or unique prefix, local or
// in the fleet), pushing a local one first; the move is a compare-and-swap
// retried when another mover got there first, or, with req.ExpectSet,
// made only while the ref points at req.Expect.
func (d *Daemon) SetRef(ctx context.Context, name string, req api.RefRequest) (*api.Ref, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	if !coord.ValidRef(name) {
		return nil, apiErr(api.CodeInvalidInput, "ref %q: use letters, digits, '_', '.', '-' and '/' (128 at most)", name)
	}
	snap, err := d.snapshotByRef(ctx, req.Snapshot)
	if err != nil {
		return nil, err
	}
	if _, err := d.snapshotPushed(ctx, snap.ID); err != nil {
		return nil, err
	}
	var expect *string
	if req.ExpectSet || req.Expect != "" {
		expect = &req.Expect
	}
	r, err := d.fleet.SetRef(ctx, name, snap.ID, expect)
	if err != nil {
		return nil, refErr(err)
	}
	v := refView(r)
	return &v, nil
}

// GetRef returns ref name.
func (d *Daemon) GetRef(ctx context.Context, name string) (*api.Ref, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	r, err := d.fleet.GetRef(ctx, name)
	if err != nil {
		return nil, refErr(err)
	}
	v := refView(r)
	return &v, nil
}

// ListRefs lists the fleet's refs.
func (d *Daemon) ListRefs(ctx context.Context) (*api.RefList, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	refs, more, err := d.fleet.ListRefs(ctx, maxFleetList)
	if err != nil {
		return nil, refErr(err)
	}
	out := &api.RefList{Refs: []api.Ref{}, More: more}
	for _, r := range refs {
		out.Refs = append(out.Refs, refView(r))
	}
	return out, nil
}

// DeleteRef removes ref name (its snapshot stays).
func (d *Daemon) DeleteRef(ctx context.Context, name string) error {
	if d.fleet == nil {
		return noFleet()
	}
	if err := d.fleet.DeleteRef(ctx, name); err != nil {
		return refErr(err)
	}
	return nil
}

// checkReceiver refuses a hand-off to a daemon the fleet does not know
// (a typo) or whose heartbeat stopped (down, or cut off from the bucket):
// the session would be fenced here and answer nowhere until someone took
// it over.
func (d *Daemon) checkReceiver(ctx context.Context, id, to string) error {
	m, err := d.fleet.Member(ctx, to)
	switch {
	case errors.Is(err, coord.ErrNotFound):
		return apiErr(api.CodeNotFound, "move session %s: no daemon named %s in the fleet; vfsd daemon list shows its daemons", id, to)
	case err != nil:
		return apiErr(api.CodeUnavailable, "move session %s: %v; retry once the remote answers", id, err)
	}
	if age := time.Since(m.Heartbeat); age >= d.fleet.Lease+d.fleet.Skew {
		return apiErr(api.CodeUnavailable, "move session %s: daemon %s's last heartbeat was %s ago, so it looks down: the session would answer nowhere until it came back; start it (vfsd serve --name %s) or move the session to a live daemon (vfsd daemon list)",
			id, to, age.Round(time.Second), to)
	}
	return nil
}

// ListDaemons lists the fleet's members by their heartbeats.
func (d *Daemon) ListDaemons(ctx context.Context) (*api.DaemonList, error) {
	if d.fleet == nil {
		return nil, noFleet()
	}
	ms, _, err := d.fleet.Members(ctx, maxFleetList)
	if err != nil {
		return nil, apiErr(api.CodeUnavailable, "%v", err)
	}
	out := &api.DaemonList{Self: d.fleet.Daemon, Daemons: []api.Daemon{}}
	now := time.Now()
	for _, m := range ms {
		out.Daemons = append(out.Daemons, api.Daemon{Name: m.Name, Started: m.Started, Heartbeat: m.Heartbeat,
			Alive: now.Sub(m.Heartbeat) < d.fleet.Lease+d.fleet.Skew, Self: m.Name == d.fleet.Daemon,
			Version: m.Version, Sessions: m.Sessions})
	}
	return out, nil
}

// fleetSnapshots adds to out the snapshots of the fleet's index: the
// pushing daemon on those listed already, and the others, not local, as
// remote ones. Newest first.
func (d *Daemon) fleetSnapshots(ctx context.Context, out *api.SnapshotList) error {
	// A listing waits on the remote a bounded time: a remote that does
	// not answer leaves the fleet's snapshots out, saying so, and the
	// local ones are listed as before.
	lctx, cancel := context.WithTimeout(ctx, fleetListWait)
	defer cancel()
	infos, _, err := d.fleet.Snapshots(lctx, "", maxFleetList)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		out.FleetError = fmt.Sprintf("the fleet's snapshots are left out: %v", err)
		return nil
	}
	at := map[string]int{}
	for i, s := range out.Snapshots {
		at[s.ID] = i
	}
	for _, in := range infos {
		if i, ok := at[in.ID]; ok {
			out.Snapshots[i].Daemon = in.Daemon
			continue
		}
		out.Snapshots = append(out.Snapshots, api.Snapshot{ID: in.ID, Label: in.Label, Session: in.Session,
			CreatedAt: in.Created, Files: in.Files, Bytes: in.Bytes, Daemon: in.Daemon, Remote: true})
	}
	sort.SliceStable(out.Snapshots, func(i, j int) bool { return out.Snapshots[i].CreatedAt.After(out.Snapshots[j].CreatedAt) })
	return nil
}

// resolveFleet resolves a snapshot prefix against the fleet's index too:
// local is the local answer (an ID, or "" when none matched). A prefix
// matching two snapshots across the two is ambiguous.
func (d *Daemon) resolveFleet(ctx context.Context, prefix, local string) (string, error) {
	prefix = strings.ToLower(prefix)
	if d.fleet == nil || len(prefix) >= 64 || len(prefix) < 4 || strings.Trim(prefix, "0123456789abcdef") != "" {
		return local, nil
	}
	lctx, cancel := context.WithTimeout(ctx, fleetListWait)
	defer cancel()
	infos, _, err := d.fleet.Snapshots(lctx, prefix, maxFleetMatch)
	if err != nil {
		if local != "" {
			return local, nil
		}
		return "", apiErr(api.CodeUnavailable, "resolve snapshot %q in the fleet: %v; give the full ID", prefix, err)
	}
	ids := []string{}
	if local != "" {
		ids = append(ids, local)
	}
	for _, in := range infos {
		if !slices.Contains(ids, in.ID) {
			ids = append(ids, in.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", apiErr(api.CodeNotFound, "no snapshot %q here or in the fleet; list them with vfsd snapshot list", prefix)
	case 1:
		return ids[0], nil
	}
	return "", apiErr(api.CodeInvalidInput, "snapshot %q: ambiguous prefix across the fleet (%d snapshots); give more hex digits", prefix, len(ids))
}

// fleetHolds returns, for the snapshots among ids, what in the fleet
// points at them: refs and session heads. Those are not deleted from the
// remote (nor locally, where they may be the only copy of a head).
func (d *Daemon) fleetHolds(ctx context.Context, ids []string) (map[string]string, error) {
	if d.fleet == nil {
		return nil, nil
	}
	out := map[string]string{}
	refs, _, err := d.fleet.ListRefs(ctx, maxFleetList)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if slices.Contains(ids, r.Snapshot) {
			out[r.Snapshot] = "ref " + r.Name
		}
	}
	owners, _, err := d.fleet.Owners(ctx, maxFleetList)
	if err != nil {
		return nil, err
	}
	for _, o := range owners {
		if !o.Closed && slices.Contains(ids, o.Head) {
			out[o.Head] = fmt.Sprintf("the head of session %s (daemon %s)", o.Session, o.Daemon)
		}
	}
	return out, nil
}

func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:min(12, len(id))]
	}
	return out
}

// checkFleetHolds refuses to delete a snapshot a ref or a session head
// points at.
func (d *Daemon) checkFleetHolds(ctx context.Context, ids []string) error {
	holds, err := d.fleetHolds(ctx, ids)
	if err != nil {
		return apiErr(api.CodeUnavailable, "check the fleet's refs and heads before deleting: %v; retry once the remote answers", err)
	}
	for _, id := range ids {
		if why, ok := holds[id]; ok {
			return apiErr(api.CodeConflict, "snapshot %s is %s in the fleet; move or remove that first (vfsd ref rm NAME)", id[:12], why)
		}
	}
	return nil
}
