//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// overlayfsAvailable says why the overlayfs target cannot run, or nil.
func overlayfsAvailable() error {
	for _, tool := range []string{"fuse-overlayfs", "fusermount3"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install fuse-overlayfs fuse3)", tool)
		}
	}
	return nil
}

// overlayfsWorks says why the overlayfs target cannot run, or nil: it is
// not installed, or it is and mounting it fails here.
func (w *mountWorkload) overlayfsWorks(ctx context.Context) error {
	if err := overlayfsAvailable(); err != nil {
		return err
	}
	t, err := w.newTarget(ctx, targetOverlayfs, -1)
	if cerr := t.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("installed, but it does not work here: %w", err)
	}
	return nil
}

// mountWorkload runs the steps on one target after another.
type mountWorkload struct {
	opts    MountOptions
	work    string // the run's directory; quiesced before every timed step
	tarball string
	tree    treeStats     // what the tarball holds: every target's walk must agree
	sedDir  string        // sed_i's directory, relative to the extracted tree
	block   []byte        // seq_write's block
	grepRef int           // rg's matching lines on the first target; -1 before
	settle  time.Duration // wait before each round's first step
	fsNote  string        // the filesystem, and why the wait
	// stepNames are the steps that run, in order; container is the
	// container steps' fixture (nil when they do not run).
	stepNames []string
	container *containerFixture
	// cacheIssues records where seq_read's page cache drop failed.
	cacheIssues []string
}

// target is a directory to run the workload in: a plain directory or a
// mount point.
type target struct {
	name string
	dir  string
	// backing is the plain directory that holds the target's files, where
	// there is one (loopback: the looped-back directory; overlayfs: the
	// upper layer).
	backing string
	session *vfs.Session // vfsd's session
	closers []func() error
}

// close tears the target down, last set up first.
func (t *target) close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	return errors.Join(errs...)
}

// newTarget sets up target name under a fresh directory of the run.
func (w *mountWorkload) newTarget(ctx context.Context, name string, round int) (*target, error) {
	root := filepath.Join(w.work, fmt.Sprintf("%s-%d", name, round))
	if round < 0 {
		root = filepath.Join(w.work, name+"-probe")
	}
	t := &target{name: name}
	mkdirs := func(names ...string) ([]string, error) {
		var dirs []string
		for _, n := range names {
			d := filepath.Join(root, n)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			dirs = append(dirs, d)
		}
		return dirs, nil
	}
	t.closers = append(t.closers, func() error { return os.RemoveAll(root) })
	kind := name
	if _, ok := w.variant(name); ok {
		kind = targetVfsd // an A/B variant of vfsd's FUSE mount
	}
	switch kind {
	case targetNative:
		dirs, err := mkdirs("dir")
		if err != nil {
			return t, err
		}
		t.dir = dirs[0]
	case targetKernelOverlay:
		dirs, err := mkdirs("lower", "upper", "work", "mnt")
		if err != nil {
			return t, err
		}
		unmount, err := mountKernelOverlay(dirs[0], dirs[1], dirs[2], dirs[3])
		if err != nil {
			return t, err
		}
		t.closers = append(t.closers, unmount)
		t.dir, t.backing = dirs[3], dirs[1]
	case targetVfsdOverlay:
		dirs, err := mkdirs("state", "mnt")
		if err != nil {
			return t, err
		}
		repo, err := snapshot.OpenLocalRepo(ctx, dirs[0], snapshot.RepoOptions{})
		if err != nil {
			return t, fmt.Errorf("open repo: %w", err)
		}
		t.closers = append(t.closers, repo.Close)
		if t.session, err = repo.NewSession(ctx, snapshot.SessionOptions{ID: "bench-mount"}); err != nil {
			return t, fmt.Errorf("new session: %w", err)
		}
		unmount, err := OverlayBackend(ctx, repo, t.session, dirs[1])
		if err != nil {
			return t, err
		}
		t.closers = append(t.closers, unmount)
		// What programs write is in the upper directory until the
		// (untimed) unmount ingests it: that is the backing file.
		t.dir, t.backing = dirs[1], filepath.Join(root, OverlayStateDir, "upper")
	case targetVfsd:
		dirs, err := mkdirs("state", "mnt")
		if err != nil {
			return t, err
		}
		repo, err := snapshot.OpenLocalRepo(ctx, dirs[0], snapshot.RepoOptions{})
		if err != nil {
			return t, fmt.Errorf("open repo: %w", err)
		}
		t.closers = append(t.closers, repo.Close)
		if t.session, err = repo.NewSession(ctx, snapshot.SessionOptions{ID: "bench-mount"}); err != nil {
			return t, fmt.Errorf("new session: %w", err)
		}
		mo, _ := w.variant(name)
		m, err := mount.New(t.session, dirs[1], mo)
		if err != nil {
			return t, err
		}
		t.closers = append(t.closers, m.Unmount)
		t.dir = dirs[1]
	case targetLoopback, targetLoopNoPT:
		dirs, err := mkdirs("backing", "mnt")
		if err != nil {
			return t, err
		}
		newRoot := gofs.NewLoopbackRoot
		if name == targetLoopNoPT {
			newRoot = newNoPassthroughRoot
		}
		rootNode, err := newRoot(dirs[0])
		if err != nil {
			return t, fmt.Errorf("loopback of %s: %w", dirs[0], err)
		}
		timeout, negative := loopbackTimeout, time.Duration(0)
		server, err := gofs.Mount(dirs[1], rootNode, &gofs.Options{
			MountOptions: fuse.MountOptions{
				DirectMount: true,
				FsName:      "loopback:" + dirs[0],
				Name:        "loopback",
				MaxWrite:    loopbackMaxWrite,
			},
			EntryTimeout:    &timeout,
			AttrTimeout:     &timeout,
			NegativeTimeout: &negative,
		})
		if err != nil {
			return t, fmt.Errorf("mount loopback at %s: %w (is /dev/fuse available, and fuse3 installed?)", dirs[1], err)
		}
		t.closers = append(t.closers, func() error {
			if err := server.Unmount(); err != nil {
				if lerr := syscall.Unmount(dirs[1], syscall.MNT_DETACH); lerr != nil {
					return fmt.Errorf("unmount loopback %s: %w", dirs[1], err)
				}
			}
			return nil
		})
		t.dir, t.backing = dirs[1], dirs[0]
	case targetOverlayfs:
		dirs, err := mkdirs("lower", "upper", "work", "mnt")
		if err != nil {
			return t, err
		}
		mnt := dirs[3]
		opt := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dirs[0], dirs[1], dirs[2])
		if out, err := exec.CommandContext(ctx, "fuse-overlayfs", "-o", opt, mnt).CombinedOutput(); err != nil {
			return t, fmt.Errorf("fuse-overlayfs -o %s %s: %w: %s", opt, mnt, err, bytes.TrimSpace(out))
		}
		t.closers = append(t.closers, func() error {
			if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
				return fmt.Errorf("fusermount3 -u %s: %w: %s", mnt, err, bytes.TrimSpace(out))
			}
			return nil
		})
		if err := checkMounted(mnt); err != nil {
			return t, err
		}
		t.dir, t.backing = mnt, dirs[1]
	default:
		return t, fmt.Errorf("unknown target %q", name)
	}
	return t, nil
}

// checkMounted fails unless a filesystem is mounted at dir.
func checkMounted(dir string) error {
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	if st.Dev == parent.Dev {
		return fmt.Errorf("nothing is mounted at %s", dir)
	}
	return nil
}
