package toolstest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot/snapshottest"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Broken is an Env whose session was forked from a lazily loaded snapshot
// one of whose directories cannot be read (snapshottest.Broken).
type Broken struct {
	*Env
	Dir      string // the repository's directory (store/ and sessions/)
	Snapshot string // the lazily loaded snapshot the session was forked from
	BadDir   string // "bad": its manifest cannot be read
	BadFile  string // "bad/sub/f.txt", beneath it
	GoodFile string // "good/a.txt", readable
}

// BrokenFiles are the files of a Broken env's snapshot, as they were
// written (BadDir's are unreadable once the record is corrupted).
var BrokenFiles = snapshottest.BrokenFiles

// NewBroken builds a Broken env under policy pol (nil: the default). The
// session is lazily loaded and its tree still lazy; BadDir's manifest
// fails to load with a vfs.CodeIO error.
func NewBroken(t testing.TB, pol *policy.Policy) *Broken {
	t.Helper()
	b := snapshottest.NewBroken(t)
	if pol == nil {
		pol = policy.Default()
	}
	ts, err := tools.New(b.S, tools.Options{Policy: pol, Blobs: b.Repo.Blobs()})
	require.NoError(t, err)
	return &Broken{Env: &Env{T: t, Repo: b.Repo, S: b.S, Tools: ts}, Dir: b.Dir, Snapshot: b.Snapshot,
		BadDir: b.BadDir, BadFile: b.BadFile, GoodFile: b.GoodFile}
}

// Fingerprint sums up what a Broken env's session holds without reading
// BadDir (State would fail there): its totals, the root's entries and the
// readable file. A failed call must leave it as it was.
func (b *Broken) Fingerprint() string {
	b.T.Helper()
	t := b.S.Tree()
	out := fmt.Sprintf("nodes=%d files=%d bytes=%d maxino=%d\n", t.Len(), t.Files(), t.Bytes(), t.MaxIno())
	require.NoError(b.T, t.ChildrenErr(vfs.Root, func(name string, n vfs.Node) bool {
		out += fmt.Sprintf("%s %s %d %d\n", name, n.Kind, n.Version, n.Mtime)
		return true
	}))
	return out + b.Read(b.GoodFile)
}
