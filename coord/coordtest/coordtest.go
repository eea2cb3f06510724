// Package coordtest is the conformance suite every coord.Backend passes:
// the compare-and-swap semantics the fleet's protocol relies on, raced,
// and the protocol itself (ownership, fencing, hand-off, refs) run over
// the backend.
package coordtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/coord"
)

// Options tune the suite for a backend.
type Options struct {
	// Rounds is how many times each race runs; 50 when zero.
	Rounds int
	// Racers is how many writers race in each round; 8 when zero.
	Racers int
	// Raw, when set, writes a value under a key bypassing the Backend's
	// bounds (a hostile tenant's object); the poisoning tests skip
	// without it.
	Raw func(t *testing.T, key string, value []byte)
}

// Run runs the suite; newBackend returns an empty backend (a fresh
// prefix) each time it is called.
func Run(t *testing.T, newBackend func(t *testing.T) coord.Backend, opts Options) {
	if opts.Rounds == 0 {
		opts.Rounds = 50
	}
	if opts.Racers == 0 {
		opts.Racers = 8
	}
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		return c
	}
	t.Run("CAS", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		_, err := b.Get(c, "k/a")
		require.ErrorIs(t, err, coord.ErrNotFound)
		v1, err := b.Put(c, "k/a", []byte("one"), coord.Cond{Absent: true})
		require.NoError(t, err)
		require.NotEmpty(t, v1)
		_, err = b.Put(c, "k/a", []byte("two"), coord.Cond{Absent: true})
		require.ErrorIs(t, err, coord.ErrConflict, "If-None-Match: * over an existing key")
		_, err = b.Put(c, "k/a", []byte("two"), coord.Cond{Match: "not-a-version"})
		require.ErrorIs(t, err, coord.ErrConflict, "If-Match on a wrong version")
		v2, err := b.Put(c, "k/a", []byte("two"), coord.Cond{Match: v1})
		require.NoError(t, err)
		require.NotEqual(t, v1, v2)
		_, err = b.Put(c, "k/a", []byte("three"), coord.Cond{Match: v1})
		require.ErrorIs(t, err, coord.ErrConflict, "If-Match on a stale version")
		it, err := b.Get(c, "k/a")
		require.NoError(t, err)
		require.Equal(t, "two", string(it.Value))
		require.Equal(t, v2, it.Version)
		_, err = b.Put(c, "k/missing", []byte("x"), coord.Cond{Match: v2})
		require.ErrorIs(t, err, coord.ErrConflict, "If-Match on a missing key")
		v3, err := b.Put(c, "k/a", []byte("four"), coord.Cond{})
		require.NoError(t, err)
		require.NotEqual(t, v2, v3)
		require.NoError(t, b.Delete(c, "k/a"))
		require.NoError(t, b.Delete(c, "k/a"), "deleting a missing key")
		_, err = b.Get(c, "k/a")
		require.ErrorIs(t, err, coord.ErrNotFound)
	})
	t.Run("List", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		for _, k := range []string{"l/b", "l/a/x", "l/c", "m/a", "la"} {
			_, err := b.Put(c, k, []byte(k), coord.Cond{})
			require.NoError(t, err)
		}
		var got []string
		require.NoError(t, b.List(c, "l/", func(k string) error { got = append(got, k); return nil }))
		require.Equal(t, []string{"l/a/x", "l/b", "l/c"}, got)
		stop := errors.New("stop")
		n := 0
		require.ErrorIs(t, b.List(c, "l/", func(string) error { n++; return stop }), stop)
		require.Equal(t, 1, n)
	})
	t.Run("TooLarge", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		big := bytes.Repeat([]byte("x"), coord.MaxValueBytes+1)
		_, err := b.Put(c, "big", big, coord.Cond{})
		require.NoError(t, err)
		it, err := b.Get(c, "big")
		require.ErrorIs(t, err, coord.ErrTooLarge)
		require.Nil(t, it.Value)
	})
	t.Run("RaceCreate", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		for round := range opts.Rounds {
			key := fmt.Sprintf("race/%d", round)
			var wins atomic.Int32
			var wg sync.WaitGroup
			for g := range opts.Racers {
				wg.Go(func() {
					if _, err := b.Put(c, key, []byte(fmt.Sprint(g)), coord.Cond{Absent: true}); err == nil {
						wins.Add(1)
					} else if !errors.Is(err, coord.ErrConflict) {
						t.Errorf("round %d racer %d: %v", round, g, err)
					}
				})
			}
			wg.Wait()
			require.EqualValues(t, 1, wins.Load(), "round %d: exactly one create wins", round)
		}
	})
	t.Run("RaceMatch", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		v, err := b.Put(c, "race", []byte("base"), coord.Cond{})
		require.NoError(t, err)
		for round := range opts.Rounds {
			var wins atomic.Int32
			var next atomic.Value
			var wg sync.WaitGroup
			for g := range opts.Racers {
				wg.Go(func() {
					nv, err := b.Put(c, "race", []byte(fmt.Sprintf("%d/%d", round, g)), coord.Cond{Match: v})
					if err == nil {
						wins.Add(1)
						next.Store(nv)
					} else if !errors.Is(err, coord.ErrConflict) {
						t.Errorf("round %d racer %d: %v", round, g, err)
					}
				})
			}
			wg.Wait()
			require.EqualValues(t, 1, wins.Load(), "round %d: exactly one If-Match wins", round)
			v = next.Load().(string)
		}
	})
	t.Run("Protocol", func(t *testing.T) { runProtocol(t, newBackend, opts, ctx) })
}

// fleets returns two daemons' views of one backend, a and b, on a clock
// the test moves.
func fleets(t *testing.T, b coord.Backend) (fa, fb *coord.Fleet, clock *testClock) {
	clock = &testClock{t: time.Now()}
	fa, err := coord.New(b, "daemon-a")
	require.NoError(t, err)
	fb, err = coord.New(b, "daemon-b")
	require.NoError(t, err)
	for _, f := range []*coord.Fleet{fa, fb} {
		f.Lease, f.Skew, f.Now = 10*time.Second, time.Second, clock.now
	}
	return fa, fb, clock
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	snap1 = "1111111111111111111111111111111111111111111111111111111111111111"
	snap2 = "2222222222222222222222222222222222222222222222222222222222222222"
)

func runProtocol(t *testing.T, newBackend func(t *testing.T) coord.Backend, opts Options, ctx func(*testing.T) context.Context) {
	t.Run("CreateRace", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		for round := range opts.Rounds {
			id := fmt.Sprintf("s%d", round)
			var wins atomic.Int32
			var wg sync.WaitGroup
			for _, f := range []*coord.Fleet{fa, fb, fa, fb} {
				wg.Go(func() {
					l, err := f.Create(c, id, nil)
					var owned *coord.OwnedError
					switch {
					case err == nil:
						require.Equal(t, f.Daemon, l.Daemon)
						wins.Add(1)
					case errors.As(err, &owned):
						// the other daemon won
					default:
						t.Errorf("round %d: %v", round, err)
					}
				})
			}
			wg.Wait()
			o, err := fa.Get(c, id)
			require.NoError(t, err)
			// A daemon's second claim of a session it owns already
			// counts as a win of its own (a re-creation): what matters
			// is that the record names one daemon and both racers of
			// the other daemon lost.
			require.GreaterOrEqual(t, wins.Load(), int32(1), "round %d", round)
			require.LessOrEqual(t, wins.Load(), int32(2), "round %d", round)
			require.Contains(t, []string{"daemon-a", "daemon-b"}, o.Daemon)
		}
	})
	t.Run("TakeAfterLease", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		fa, fb, clock := fleets(t, b)
		la, err := fa.Create(c, "s", nil)
		require.NoError(t, err)
		require.EqualValues(t, 1, la.Epoch)
		require.NoError(t, fa.MoveHead(c, la, snap1))
		_, err = fb.Take(c, "s")
		var owned *coord.OwnedError
		require.ErrorAs(t, err, &owned, "a live lease is not taken")
		require.Equal(t, "daemon-a", owned.Owner.Daemon)
		clock.add(10*time.Second + 500*time.Millisecond) // past the lease, within the skew
		_, err = fb.Take(c, "s")
		require.ErrorAs(t, err, &owned, "within the skew past expiry the lease still counts")
		clock.add(time.Second)
		lb, err := fb.Take(c, "s")
		require.NoError(t, err)
		require.EqualValues(t, 2, lb.Epoch)
		require.Equal(t, snap1, lb.Head, "the head carries over")
		require.False(t, la.Valid(fa, clock.now()), "the old owner's lease ran out by its own clock")
		err = fa.MoveHead(c, la, snap2)
		var fenced *coord.FencedError
		require.ErrorAs(t, err, &fenced, "the old owner's next write is refused")
		require.Equal(t, "daemon-b", fenced.Owner.Daemon)
		require.ErrorAs(t, fa.Renew(c, la), &fenced)
		o, err := fb.Get(c, "s")
		require.NoError(t, err)
		require.Equal(t, snap1, o.Head, "the fenced write left nothing")
		require.NoError(t, fb.MoveHead(c, lb, snap2))
	})
	t.Run("TakeRace", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		f0, err := coord.New(b, "daemon-0")
		require.NoError(t, err)
		clock := &testClock{t: time.Now()}
		var takers []*coord.Fleet
		for i := range opts.Racers {
			f, err := coord.New(b, fmt.Sprintf("taker-%d", i))
			require.NoError(t, err)
			f.Now = clock.now
			takers = append(takers, f)
		}
		f0.Now = clock.now
		for round := range max(opts.Rounds/5, 3) {
			id := fmt.Sprintf("t%d", round)
			_, err := f0.Create(c, id, nil)
			require.NoError(t, err)
			clock.add(coord.DefaultLease + coord.DefaultSkew + time.Second)
			var wins atomic.Int32
			var winner atomic.Value
			var wg sync.WaitGroup
			for _, f := range takers {
				wg.Go(func() {
					l, err := f.Take(c, id)
					var owned *coord.OwnedError
					switch {
					case err == nil:
						wins.Add(1)
						winner.Store(l.Daemon)
					case errors.As(err, &owned), errors.Is(err, coord.ErrConflict):
					default:
						t.Errorf("round %d: %v", round, err)
					}
				})
			}
			wg.Wait()
			require.EqualValues(t, 1, wins.Load(), "round %d: exactly one taker wins", round)
			o, err := f0.Get(c, id)
			require.NoError(t, err)
			require.Equal(t, winner.Load(), o.Daemon)
			require.EqualValues(t, 2, o.Epoch)
		}
	})
	t.Run("Handoff", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		la, err := fa.Create(c, "h", nil)
		require.NoError(t, err)
		require.NoError(t, fa.Handoff(c, la, "daemon-b", snap1))
		require.Equal(t, "daemon-b", la.Daemon)
		lb, err := fb.Take(c, "h") // adopting what was handed
		require.NoError(t, err)
		require.EqualValues(t, 2, lb.Epoch)
		require.Equal(t, snap1, lb.Head)
		require.Equal(t, "daemon-a", lb.From)
		stale := &coord.Lease{Owner: coord.Owner{Session: "h", Daemon: "daemon-a", Epoch: 1}}
		var fenced *coord.FencedError
		require.ErrorAs(t, fa.MoveHead(c, stale, snap2), &fenced)
		require.NoError(t, fb.Release(c, lb))
		la2, err := fa.Create(c, "h", nil)
		require.NoError(t, err, "a closed session may be created anew")
		require.EqualValues(t, 3, la2.Epoch)
	})
	t.Run("SettingsTravel", func(t *testing.T) {
		// The creator's settings stay on the record through every later
		// write: renewals, head moves, a hand-off, a takeover, and the
		// writes of a lease resumed after a restart (which never saw them).
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		set := json.RawMessage(`{"policy":"readonly","contract":"aos"}`)
		la, err := fa.Create(c, "st", set)
		require.NoError(t, err)
		require.NoError(t, fa.Renew(c, la))
		require.NoError(t, fa.MoveHead(c, la, snap1))
		resumed := coord.Resume("st", "daemon-a", la.Epoch)
		require.NoError(t, fa.MoveHead(c, resumed, snap2))
		require.NoError(t, fa.Handoff(c, resumed, "daemon-b", snap2))
		lb, err := fb.Take(c, "st")
		require.NoError(t, err)
		require.JSONEq(t, string(set), string(lb.Settings))
		fb.Lease = 0 // its lease ends at once: daemon-a may take it over
		require.NoError(t, fb.Renew(c, lb))
		time.Sleep(10 * time.Millisecond)
		fa.Skew = 0
		la2, err := fa.Take(c, "st")
		require.NoError(t, err)
		require.JSONEq(t, string(set), string(la2.Settings))
		o, err := fb.Get(c, "st")
		require.NoError(t, err)
		require.JSONEq(t, string(set), string(o.Settings))
	})
	t.Run("RefMovers", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		movers, moves := 4, max(opts.Rounds/5, 5)
		var wg sync.WaitGroup
		for m := range movers {
			f := []*coord.Fleet{fa, fb}[m%2]
			wg.Go(func() {
				for i := range moves {
					snap := fmt.Sprintf("%064x", m*1000+i)
					if _, err := f.SetRef(c, "team/main", snap, nil); err != nil {
						t.Errorf("mover %d: %v", m, err)
					}
				}
			})
		}
		wg.Wait()
		r, err := fa.GetRef(c, "team/main")
		require.NoError(t, err)
		require.EqualValues(t, movers*moves, r.Seq, "every move applied, none lost")
		require.Len(t, r.History, coord.RefHistory)
		cur := r.Snapshot
		_, err = fa.SetRef(c, "team/main", snap1, &cur)
		require.NoError(t, err)
		_, err = fb.SetRef(c, "team/main", snap2, &cur)
		require.ErrorIs(t, err, coord.ErrRefMoved)
		empty := ""
		_, err = fb.SetRef(c, "fresh", snap2, &empty)
		require.NoError(t, err)
		_, err = fb.SetRef(c, "fresh", snap2, &empty)
		require.ErrorIs(t, err, coord.ErrRefMoved)
		refs, more, err := fa.ListRefs(c, 100)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, refs, 2)
		require.NoError(t, fa.DeleteRef(c, "fresh"))
		_, err = fa.GetRef(c, "fresh")
		require.ErrorIs(t, err, coord.ErrNotFound)
		for _, bad := range []string{"", "../x", "a//b", "/a", "a/", ".a", strings.Repeat("a", 129)} {
			_, err := fa.SetRef(c, bad, snap1, nil)
			require.ErrorIs(t, err, coord.ErrBadRef, "%q", bad)
		}
	})
	t.Run("IndexAndMembers", func(t *testing.T) {
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		require.NoError(t, fa.Announce(c, coord.SnapInfo{ID: snap1, Session: "s1", Label: strings.Repeat("é", 100), Files: 3}))
		require.NoError(t, fb.Announce(c, coord.SnapInfo{ID: snap1, Session: "s9"}))
		require.NoError(t, fb.Announce(c, coord.SnapInfo{ID: snap2, Session: "s2"}))
		all, more, err := fb.Snapshots(c, "", 100)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, all, 2)
		require.Equal(t, snap1, all[0].ID)
		require.Equal(t, "daemon-b", all[1].Daemon)
		some, _, err := fa.Snapshots(c, "2222", 100)
		require.NoError(t, err)
		require.Len(t, some, 1)
		require.NoError(t, fa.Heartbeat(c, coord.Member{Sessions: 2}))
		require.NoError(t, fb.Heartbeat(c, coord.Member{}))
		ms, _, err := fa.Members(c, 100)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Equal(t, 2, ms[0].Sessions)
		m, err := fb.Member(c, "daemon-a")
		require.NoError(t, err)
		require.Equal(t, "daemon-a", m.Name)
		require.Equal(t, 2, m.Sessions)
		_, err = fb.Member(c, "daemon-z")
		require.ErrorIs(t, err, coord.ErrNotFound)
		_, err = fb.Member(c, "../x")
		require.ErrorIs(t, err, coord.ErrNotFound)
	})
	t.Run("Poison", func(t *testing.T) {
		if opts.Raw == nil {
			t.Skip("the backend gives no raw writer")
		}
		b, c := newBackend(t), ctx(t)
		fa, fb, _ := fleets(t, b)
		la, err := fa.Create(c, "p", nil)
		require.NoError(t, err)
		// Garbage, a record of another session, and an oversized object
		// under owner keys: the owner keeps renewing and moving its head
		// (repairing the record); a new session over garbage is created.
		for _, v := range [][]byte{[]byte("{garbage"), []byte(`{"session":"other","daemon":"x","epoch":9}`), bytes.Repeat([]byte("y"), coord.MaxValueBytes+10)} {
			opts.Raw(t, "sessions/p", v)
			require.NoError(t, fa.MoveHead(c, la, snap1))
			o, err := fb.Get(c, "p")
			require.NoError(t, err)
			require.Equal(t, "daemon-a", o.Daemon)
			require.Equal(t, snap1, o.Head)
		}
		opts.Raw(t, "sessions/q", []byte("nonsense"))
		lq, err := fb.Create(c, "q", nil)
		require.NoError(t, err)
		require.Equal(t, "daemon-b", lq.Daemon)
		// Hostile index keys, refs and members are skipped.
		opts.Raw(t, "snaps/zz/notbase64!", nil)
		opts.Raw(t, "snaps/"+snap2+"/bm90IGpzb24", nil)
		opts.Raw(t, "refs/bad", []byte("{}"))
		opts.Raw(t, "refs/huge", bytes.Repeat([]byte("z"), coord.MaxValueBytes+1))
		opts.Raw(t, "daemons/ghost", []byte("[]"))
		snaps, _, err := fa.Snapshots(c, "", 100)
		require.NoError(t, err)
		require.Empty(t, snaps)
		refs, _, err := fa.ListRefs(c, 100)
		require.NoError(t, err)
		require.Empty(t, refs)
		_, err = fa.SetRef(c, "bad", snap1, nil)
		require.NoError(t, err, "a ref over garbage is set")
		ms, _, err := fa.Members(c, 100)
		require.NoError(t, err)
		require.Empty(t, ms)
		_, err = fa.Member(c, "ghost")
		require.ErrorIs(t, err, coord.ErrNotFound, "an unreadable membership record is no member")
	})
}
