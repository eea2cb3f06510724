//go:build linux && !vfsd_osroot

package hostmount

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/vfs"
)

// file imports one file's content: from the cache when its identity is
// unchanged and the blob still stored, else by reading it through a fresh
// descriptor opened beneath the root by its real path, refusing symlinks,
// and checked to be the file the scan saw.
func (ci *contentImport) file(ctx context.Context, s *scanned, e *entry) error {
	if h, enc, ok := ci.im.cache.lookup(e.id); ok {
		unpin, ok, err := ci.repo.Adopt(ctx, h)
		if err != nil {
			return err
		}
		if ok {
			ci.finish(s, e, imported{hash: h, size: e.id.size, enc: enc}, unpin, true, 0)
			return nil
		}
	}
	if testHookBeforeOpenFile != nil {
		testHookBeforeOpenFile(hostJoin(s.root.path, e.openRel))
	}
	fd, err := noAtime(func(flags int) (int, error) { return openBeneath(s.root.fd, e.openRel, flags, true) }, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW)
	if err != nil {
		ci.skip(s, e, SkipChanged)
		return nil
	}
	f := fileOf(fd, e.openRel)
	defer f.Close()
	var before unix.Stat_t
	if err := unix.Fstat(fd, &before); err != nil || before.Mode&unix.S_IFMT != unix.S_IFREG ||
		before.Dev != e.id.dev || before.Ino != e.id.ino {
		ci.skip(s, e, SkipChanged)
		return nil
	}
	sn := vfs.NewSniffer(f)
	counting, counted := ci.reading(sn)
	h, size, unpin, err := ci.repo.Blobs().Put(ctx, counting, true)
	if err != nil {
		ci.unread(*counted)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, unix.EIO) || errors.Is(err, unix.EACCES) {
			ci.skip(s, e, SkipUnreadable)
			return nil
		}
		return fmt.Errorf("import %s: %w", hostJoin(s.root.path, e.openRel), err)
	}
	var after unix.Stat_t
	if unix.Fstat(fd, &after) == nil && idOf(&after) == idOf(&before) {
		ci.im.cache.store(idOf(&before), h, sn.Encoding())
	}
	ci.finish(s, e, imported{hash: h, size: size, enc: sn.Encoding()}, unpin, false, *counted)
	return nil
}
