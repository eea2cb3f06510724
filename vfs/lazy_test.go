package vfs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// memManifests stores a full tree's directories as fake manifests, keyed
// by a hash of the directory's contents, as the snapshot store does.
type memManifests struct {
	dirs  map[Hash][]DirEntry
	fail  map[Hash]bool
	loads int
}

func (m *memManifests) LoadDir(_ context.Context, h Hash) ([]DirEntry, error) {
	m.loads++
	if m.fail[h] {
		return nil, errors.New("corrupt manifest")
	}
	ents, ok := m.dirs[h]
	if !ok {
		return nil, errors.New("no such manifest")
	}
	return ents, nil
}

// store records directory d of full and returns its hash.
func (m *memManifests) store(full Tree, d Path) Hash {
	var ents []DirEntry
	var key []byte
	full.children(d, func(name string, n Node) bool {
		if n.IsDir() {
			n.Blob = m.store(full, d.Join(name))
			n.Nlink = 0 // manifests store no directory link counts
		}
		ents = append(ents, DirEntry{Name: name, Node: n})
		key = AppendNode(key, name, n)
		return true
	})
	h := HashOf(key)
	m.dirs[h] = ents
	return h
}

// lazyOf returns a lazily loaded copy of full.
func lazyOf(t *testing.T, full Tree) (Tree, *memManifests) {
	m := &memManifests{dirs: map[Hash][]DirEntry{}, fail: map[Hash]bool{}}
	h := m.store(full, Root)
	root, _ := full.get(Root)
	lt := NewLazyTree(root, h, NewLazyLoader(m, NewLazyCache(1<<10)), LazyTotals{Files: full.Files(), Bytes: full.Bytes(), MaxIno: full.MaxIno(), Nodes: full.Len()})
	require.True(t, lt.IsLazy())
	return lt, m
}

// requireSameTree checks that two trees hold the same nodes and totals.
func requireSameTree(t *testing.T, want, got Tree, msg ...any) {
	t.Helper()
	require.Equal(t, string(want.Encode()), string(got.Encode()), msg...)
	require.Equal(t, want.Files(), got.Files(), msg...)
	require.Equal(t, want.Bytes(), got.Bytes(), msg...)
	require.Equal(t, want.Uppers(), got.Uppers(), msg...)
	require.Equal(t, want.MaxIno(), got.MaxIno(), msg...)
	require.Equal(t, want.Len(), got.Len(), msg...)
	// Encode leaves directory link counts out (trees compute them).
	links := func(tr Tree) map[Path]uint32 {
		out := map[Path]uint32{}
		require.NoError(t, tr.Walk(Root, func(p Path, n Node) error {
			if n.IsDir() {
				out[p] = n.Nlink
			}
			return nil
		}))
		return out
	}
	require.Equal(t, links(want), links(got), msg...)
}

// sampleTree builds a small tree three levels deep.
func sampleTree(t *testing.T) Tree {
	var evs []Event
	ts := int64(1000)
	for _, p := range []string{"a/x/f1", "a/x/f2", "a/y/g", "a/y/z/deep", "b/h", "b/i/j", "c", "d/e/f/g/h"} {
		ts++
		evs = append(evs, Event{Op: OpWrite, Path: MustPath(p), Parents: true, Blob: blob(p), Size: int64(len(p)), Time: ts})
	}
	evs = append(evs, Event{Op: OpMkdir, Path: "empty", Time: ts + 1})
	return build(t, evs...)
}

func TestLazyTreeReads(t *testing.T) {
	full := sampleTree(t)
	lt, m := lazyOf(t, full)
	requireSameTree(t, full, lt)
	for _, p := range []Path{Root, "a", "a/x", "a/x/f1", "a/y/z/deep", "d/e/f/g/h", "nope", "a/nope", "c/under-file", "empty"} {
		wn, wok := full.get(p)
		gn, gok, err := lt.Lookup(p)
		require.NoError(t, err)
		require.Equal(t, wok, gok, p)
		require.Equal(t, wn, gn, p)
		var wc, gc []string
		full.children(p, func(name string, n Node) bool { wc = append(wc, fmt.Sprint(name, n)); return true })
		lt.children(p, func(name string, n Node) bool { gc = append(gc, fmt.Sprint(name, n)); return true })
		require.Equal(t, wc, gc, p)
		require.Equal(t, full.hasChildren(p), lt.hasChildren(p), p)
		var ww, gw []Path
		require.NoError(t, full.Walk(p, func(q Path, _ Node) error { ww = append(ww, q); return nil }))
		require.NoError(t, lt.Walk(p, func(q Path, _ Node) error { gw = append(gw, q); return nil }))
		require.Equal(t, ww, gw, p)
	}
	// SkipDir inside lazy directories behaves as in the full tree.
	skip := func(tr Tree) []Path {
		var out []Path
		require.NoError(t, tr.Walk(Root, func(q Path, n Node) error {
			out = append(out, q)
			if q == "a/x" || q == "b/h" {
				return SkipDir
			}
			return nil
		}))
		return out
	}
	require.Equal(t, skip(full), skip(lt))
	// A read of one deep file reads only the manifests on its path.
	lt2, m2 := lazyOf(t, full)
	_, ok := lt2.get("d/e/f/g/h")
	require.True(t, ok)
	require.Equal(t, 5, m2.loads)
	_ = m
}

func TestLazyTreeMutations(t *testing.T) {
	ts := int64(5000)
	ev := func(e Event) Event { ts++; e.Time = ts; return e }
	cases := []struct {
		name string
		evs  []Event
	}{
		{"write deep existing", []Event{ev(Event{Op: OpWrite, Path: "a/y/z/deep", Blob: blob("new"), Size: 3})}},
		{"write new under lazy", []Event{ev(Event{Op: OpWrite, Path: "a/x/new", Blob: blob("n"), Size: 1})}},
		{"write with parents", []Event{ev(Event{Op: OpWrite, Path: "d/e/q/r/s", Parents: true, Blob: blob("s"), Size: 1})}},
		{"remove lazy dir", []Event{ev(Event{Op: OpRemove, Path: "a", Recursive: true})}},
		{"remove non-empty fails", []Event{ev(Event{Op: OpRemove, Path: "a/x"})}},
		{"rmdir empty", []Event{ev(Event{Op: OpRemove, Path: "empty", WantKind: KindDir})}},
		{"rename lazy dir", []Event{ev(Event{Op: OpRename, Path: "a/y", To: "b/moved"})}},
		{"rename then edit", []Event{ev(Event{Op: OpRename, Path: "a", To: "z"}), ev(Event{Op: OpWrite, Path: "z/y/z/deep", Blob: blob("e"), Size: 1})}},
		{"rename onto empty dir", []Event{ev(Event{Op: OpRename, Path: "a/x", To: "empty"})}},
		{"rename onto non-empty dir fails", []Event{ev(Event{Op: OpRename, Path: "a/x", To: "b/i"})}},
		{"exchange lazy dirs", []Event{ev(Event{Op: OpRename, Path: "a/x", To: "b/i", Exchange: true})}},
		{"chmod lazy dir", []Event{ev(Event{Op: OpChmod, Path: "a/y", Mode: 0o700})}},
		{"link across lazy dirs", []Event{ev(Event{Op: OpLink, Path: "a/x/f1", To: "b/i/l"}), ev(Event{Op: OpRemove, Path: "a/x/f1"})}},
		{"symlink", []Event{ev(Event{Op: OpSymlink, Path: "d/e/link", Target: "f"})}},
		{"mkdir exists", []Event{ev(Event{Op: OpMkdir, Path: "a/y/z"})}},
		{"batch", []Event{ev(Event{Op: OpBatch, Batch: []Event{
			{Op: OpMkdir, Path: "a/x/sub", Time: ts}, {Op: OpWrite, Path: "a/x/sub/f", Blob: blob("b"), Size: 1, Time: ts},
			{Op: OpRemove, Path: "b", Recursive: true, Time: ts}}})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full := sampleTree(t)
			lt, _ := lazyOf(t, full)
			for i := range c.evs {
				wt, werr := Reduce(full, &c.evs[i])
				gt, gerr := Reduce(lt, &c.evs[i])
				require.Equal(t, werr, gerr)
				if werr != nil {
					continue
				}
				full, lt = wt, gt
				requireSameTree(t, full, lt)
			}
		})
	}
}

func TestLazyTreeRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		full := sampleTree(t)
		lt, _ := lazyOf(t, full)
		ts := int64(9000)
		for step := range 150 {
			// Paths to pick from: every node of the full tree, plus fresh names.
			var paths []Path
			_ = full.Walk(Root, func(p Path, _ Node) error { paths = append(paths, p); return nil })
			pick := func() Path {
				p := paths[rng.IntN(len(paths))]
				if rng.IntN(4) == 0 {
					return p.Join(fmt.Sprintf("n%d", rng.IntN(5)))
				}
				return p
			}
			ts++
			var e Event
			switch rng.IntN(8) {
			case 0:
				e = Event{Op: OpWrite, Path: pick(), Parents: rng.IntN(2) == 0, Blob: blob(fmt.Sprint(step)), Size: int64(step)}
			case 1:
				e = Event{Op: OpMkdir, Path: pick(), Parents: rng.IntN(2) == 0}
			case 2:
				e = Event{Op: OpRemove, Path: pick(), Recursive: rng.IntN(3) > 0}
			case 3, 4:
				e = Event{Op: OpRename, Path: pick(), To: pick(), Exchange: rng.IntN(5) == 0}
			case 5:
				e = Event{Op: OpChmod, Path: pick(), Mode: 0o700}
			case 6:
				e = Event{Op: OpLink, Path: pick(), To: pick()}
			case 7:
				// Reload: a fresh lazy copy of the current full tree
				// (snapshots with hard links are loaded whole).
				if !full.HasLinks() {
					lt, _ = lazyOf(t, full)
				}
				continue
			}
			e.Time = ts
			wt, werr := Reduce(full, &e)
			gt, gerr := Reduce(lt, &e)
			require.Equal(t, werr, gerr, "seed %d step %d %+v", seed, step, e)
			if werr != nil {
				continue
			}
			full, lt = wt, gt
			requireSameTree(t, full, lt, "seed %d step %d %+v", seed, step, e)
		}
	}
}

func TestLazyTreeLoadFailure(t *testing.T) {
	full := sampleTree(t)
	lt, m := lazyOf(t, full)
	// Corrupt the manifest of a/y.
	var h Hash
	for k, ents := range m.dirs {
		for _, e := range ents {
			if e.Name == "z" && e.Node.IsDir() {
				h = k
			}
		}
	}
	require.False(t, h.IsZero())
	m.fail[h] = true
	_, _, err := lt.Lookup("a/y/z/deep")
	require.Error(t, err)
	require.ErrorIs(t, err, ErrIO)
	require.Error(t, lt.Walk(Root, func(Path, Node) error { return nil }))
	require.Error(t, lt.ChildrenErr("a/y", func(string, Node) bool { return true }))
	_, err = Reduce(lt, &Event{Op: OpWrite, Path: "a/y/z/deep", Blob: blob("x"), Size: 1, Time: 1})
	require.Error(t, err)
	_, err = Reduce(lt, &Event{Op: OpRemove, Path: "a", Recursive: true, Time: 1})
	require.Error(t, err)
	// The unreadable directory itself is known from its parent's
	// manifest; its link count is 1, "unknown".
	d, ok, err := lt.Lookup("a/y")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, d.IsDir())
	require.Equal(t, uint32(1), d.Nlink)
	// Reads elsewhere still work.
	n, ok, err := lt.Lookup("b/i/j")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, n.IsFile())
}
