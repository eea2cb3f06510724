package vfs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// symlinkTree: d/ (dir), d/f (file), d/up -> ../d/f, in -> d, abs -> /d/f,
// out -> ../x, loop -> loop, dots -> in/../d, climb -> in/../../x, bad ->
// "a\x00b" (no session path).
func symlinkTree(t *testing.T) vfs.Tree {
	t.Helper()
	tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: 0o755, Ino: 1})
	ino := uint64(1)
	add := func(path string, n vfs.Node) {
		ino++
		n.Ino = ino
		tb.Set(vfs.MustPath(path), n)
	}
	link := func(path, target string) { add(path, vfs.Node{Kind: vfs.KindSymlink, Mode: 0o777, Target: target}) }
	add("d", vfs.Node{Kind: vfs.KindDir, Mode: 0o755})
	add("d/f", vfs.Node{Kind: vfs.KindFile, Mode: 0o644})
	link("d/up", "../d/f")
	link("in", "d")
	link("abs", "/d/f")
	link("out", "../x")
	link("loop", "loop")
	link("dots", "in/../d")
	link("climb", "in/../../x")
	link("bad", "a\x00b")
	return tb.Tree()
}

func reasonOf(err error) vfs.SymlinkReason {
	var se *vfs.SymlinkError
	if errors.As(err, &se) {
		return se.Reason
	}
	return 0
}

func TestResolveSymlinks(t *testing.T) {
	tr := symlinkTree(t)
	follow := vfs.SymlinkOptions{Follow: true}
	within := vfs.SymlinkOptions{Follow: true, WithinRoot: true}
	for _, c := range []struct {
		path   string
		o      vfs.SymlinkOptions
		want   vfs.Path
		reason vfs.SymlinkReason
		link   vfs.Path
	}{
		{path: "d/f", o: follow, want: "d/f"},
		{path: "d/new/file", o: follow, want: "d/new/file"}, // missing segments are kept
		{path: "in/f", o: follow, want: "d/f"},
		{path: "in/up", o: follow, want: "d/f"},
		{path: "in/up", o: vfs.SymlinkOptions{Follow: true, NoFollowLast: true}, want: "d/up"},
		{path: "in", o: vfs.SymlinkOptions{NoFollowLast: true}, want: "in"},
		{path: "in/f", o: vfs.SymlinkOptions{}, reason: vfs.SymlinkNotFollowed, link: "in"},
		{path: "abs", o: follow, want: "d/f"},
		{path: "abs", o: within, reason: vfs.SymlinkEscapes, link: "abs"},
		{path: "out", o: follow, want: "x"}, // ".." stops at the root
		{path: "out", o: within, reason: vfs.SymlinkEscapes, link: "out"},
		{path: "dots/f", o: within, want: "d/f"}, // lexical: "in/.." is ""
		{path: "loop", o: follow, reason: vfs.SymlinkLoop},
		{path: "bad", o: follow, reason: vfs.SymlinkBadTarget, link: "bad"},
	} {
		t.Run(fmt.Sprintf("%s %+v", c.path, c.o), func(t *testing.T) {
			got, err := tr.ResolveSymlinks(vfs.MustPath(c.path), c.o)
			if c.reason == 0 {
				require.NoError(t, err)
				require.Equal(t, c.want, got)
				return
			}
			require.Equal(t, c.reason, reasonOf(err), "%v", err)
			var se *vfs.SymlinkError
			require.ErrorAs(t, err, &se)
			require.Equal(t, c.link, se.Link)
		})
	}
}

func TestResolveSymlinksText(t *testing.T) {
	tr := symlinkTree(t)
	follow := vfs.SymlinkOptions{Follow: true}
	within := vfs.SymlinkOptions{Follow: true, WithinRoot: true}
	for _, c := range []struct {
		raw    string
		o      vfs.SymlinkOptions
		want   vfs.Path
		reason vfs.SymlinkReason
	}{
		{raw: "", o: within, want: vfs.Root},
		{raw: "./d//f", o: within, want: "d/f"},
		{raw: "d/../d/f", o: within, want: "d/f"},
		{raw: "in/../d/f", o: within, want: "d/f"}, // ".." after "in" is the parent of d
		{raw: "d/up", o: within, want: "d/f"},
		{raw: "dots/f", o: within, want: "d/f"},
		{raw: "..", o: follow, reason: vfs.SymlinkAboveRoot},
		{raw: "climb", o: follow, reason: vfs.SymlinkAboveRoot}, // even when escaping is allowed
		{raw: "out", o: follow, reason: vfs.SymlinkAboveRoot},
		{raw: "abs", o: follow, want: "d/f"},
		{raw: "abs", o: within, reason: vfs.SymlinkEscapes},
		{raw: "in/f", o: vfs.SymlinkOptions{}, reason: vfs.SymlinkNotFollowed},
		{raw: "loop", o: follow, reason: vfs.SymlinkLoop},
		{raw: "bad", o: follow, reason: vfs.SymlinkBadPath},
		{raw: strings.Repeat("x", 256), o: follow, reason: vfs.SymlinkBadPath},
	} {
		t.Run(fmt.Sprintf("%q %+v", c.raw, c.o), func(t *testing.T) {
			got, err := tr.ResolveSymlinksText(c.raw, c.o)
			if c.reason == 0 {
				require.NoError(t, err)
				require.Equal(t, c.want, got)
				return
			}
			require.Equal(t, c.reason, reasonOf(err), "%v", err)
		})
	}
}

// TestResolveSymlinksHops: a chain of MaxSymlinkHops links resolves, one
// more is a loop.
func TestResolveSymlinksHops(t *testing.T) {
	for _, n := range []int{vfs.MaxSymlinkHops, vfs.MaxSymlinkHops + 1} {
		tb := vfs.NewTreeBuilder(vfs.Node{Kind: vfs.KindDir, Mode: 0o755, Ino: 1})
		for i := range n {
			tb.Set(vfs.MustPath(fmt.Sprintf("l%d", i)), vfs.Node{Kind: vfs.KindSymlink, Mode: 0o777, Ino: uint64(i + 2), Target: fmt.Sprintf("l%d", i+1)})
		}
		tr := tb.Tree()
		got, err := tr.ResolveSymlinks("l0", vfs.SymlinkOptions{Follow: true})
		if n == vfs.MaxSymlinkHops {
			require.NoError(t, err)
			require.Equal(t, vfs.Path(fmt.Sprintf("l%d", n)), got)
			continue
		}
		require.Equal(t, vfs.SymlinkLoop, reasonOf(err))
	}
}
