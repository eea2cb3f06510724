package contracttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// HostRootVar in a Case's Init options is replaced by the absolute path of
// the case's allow-listed host root.
const HostRootVar = "$HOST_ROOT"

// ImportHost is a contract.Host over a hostmount.Importer, for Go runs: it
// imports a mount into a snapshot of the repository, then merges the
// imported tree into the session in one batch (files at the same paths are
// replaced, directories merge), so a failed import changes nothing.
// Symlinks come in as symlinks, or not at all with SkipSymlinks, as the
// daemon's host does.
type ImportHost struct {
	im    *hostmount.Importer
	repo  *snapshot.Repo
	s     *vfs.Session
	roots []string
}

var (
	_ contract.Host      = (*ImportHost)(nil)
	_ contract.HostRoots = (*ImportHost)(nil)
)

// NewImportHost allows roots and imports into session s of repo. The
// importer is closed when the test ends.
func NewImportHost(t testing.TB, roots []string, asciiOnly bool, repo *snapshot.Repo, s *vfs.Session) *ImportHost {
	t.Helper()
	im, err := hostmount.New(hostmount.Options{Roots: roots, ASCIIOnly: asciiOnly})
	require.NoError(t, err)
	t.Cleanup(func() { im.Close() })
	return &ImportHost{im: im, repo: repo, s: s, roots: roots}
}

// Roots returns the allow-listed roots, in order.
func (h *ImportHost) Roots() []string { return h.roots }

// Import stages req into the session.
func (h *ImportHost) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	m := hostmount.Mount{HostPath: req.HostPath, MountPath: req.MountPath, Include: req.Include, Exclude: req.Exclude,
		MaxBytes: req.MaxBytes, FollowSymlinks: req.FollowSymlinks}
	snap, rep, err := h.im.Import(ctx, h.repo, []hostmount.Mount{m}, nil)
	if err != nil {
		return contract.ImportResult{}, err
	}
	top := vfs.Root
	if len(rep.Mounts) == 1 && rep.Mounts[0].MountPath != "" && rep.Mounts[0].MountPath != "/" {
		top = vfs.Path(strings.TrimPrefix(rep.Mounts[0].MountPath, "/"))
	}
	b := h.s.NewBatch()
	var res contract.ImportResult
	err = snap.Tree.Walk(top, func(p vfs.Path, n vfs.Node) error {
		switch {
		case p.IsRoot():
			return nil
		case n.IsDir():
			return b.Mkdir(p, vfs.MkdirOptions{Parents: true})
		case n.IsFile():
			blob, err := h.repo.Blobs().Open(ctx, n.Blob)
			if err != nil {
				return fmt.Errorf("import %s: %w", p, err)
			}
			defer blob.Close()
			res.Files++
			res.Bytes += n.Size
			return b.Write(ctx, p, readerOf(blob), vfs.WriteOptions{CreateParents: true})
		case n.IsSymlink() && !req.SkipSymlinks:
			return b.Symlink(n.Target, p)
		}
		return nil // special files, and symlinks with SkipSymlinks
	})
	if err != nil {
		b.Discard()
		return contract.ImportResult{}, err
	}
	if _, err := b.Commit(ctx); err != nil {
		return contract.ImportResult{}, err
	}
	return res, nil
}

func readerOf(b vfs.Blob) *sectionReader { return &sectionReader{b: b} }

// sectionReader reads a blob from its start.
type sectionReader struct {
	b   vfs.Blob
	off int64
}

func (r *sectionReader) Read(p []byte) (int, error) {
	n, err := r.b.ReadAt(p, r.off)
	r.off += int64(n)
	if err != nil && n > 0 {
		err = nil
	}
	return n, err
}

// writeHostFiles lays files out under dir: path → content, a path ending
// in "/" an empty directory.
func writeHostFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// writeHostSymlinks makes symlinks under dir: path → target.
func writeHostSymlinks(t testing.TB, dir string, links map[string]string) {
	t.Helper()
	for p, target := range links {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink(target, full))
	}
}
