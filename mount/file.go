//go:build linux

package mount

import (
	"context"
	"os"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/vfsd/vfsd/vfs"
)

// open opens p for a FUSE open or create. A read-only open of an existing
// file reads its content in place (roFile); anything that may write holds a
// session handle (rwFile), which copies the file up on its first write.
// When ino is not zero, the file at p must still be that inode (the one the
// kernel opens); ENOENT otherwise: that file is gone.
func (m *Mount) open(ctx context.Context, p vfs.Path, flags int, create vfs.CreateOptions, ino uint64) (gofs.FileHandle, uint32, syscall.Errno) {
	write := flags&(os.O_WRONLY|os.O_RDWR) != 0 || flags&(os.O_CREATE|os.O_TRUNC) != 0
	if write && m.opts.ReadOnly {
		return nil, 0, syscall.EROFS
	}
	if !write {
		r, err := m.s.Open(ctx, p)
		if err != nil {
			return nil, 0, Errno(err)
		}
		if ino != 0 && r.Node.Ino != ino {
			r.Close()
			return nil, 0, syscall.ENOENT
		}
		f := &roFile{r: r, passthrough: m.opts.Passthrough}
		// A read-only open has nothing to flush: NOFLUSH spares close(2)
		// its FLUSH round trip (no POSIX locks are served either).
		return f, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
	}
	vflags := flags & (os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND)
	h, err := m.s.OpenFileWith(ctx, p, vflags, create)
	if err != nil {
		return nil, 0, Errno(err)
	}
	if ino != 0 && h.Ino() != ino {
		h.Close()
		return nil, 0, syscall.ENOENT
	}
	return &rwFile{h: h, append: flags&os.O_APPEND != 0}, 0, 0
}

// roFile is a read-only open: content read in place from its blob or
// upper file, never copied.
//
// It reads the file's current content, not the content it had when opened:
// the kernel caches pages per inode, for all opens alike, so what one open
// reads another is served from the cache. After a tool rewrote the file,
// an open from before reads the new content as a fresh open does (as on a
// local filesystem when a file is rewritten in place). Once the file has
// left the tree (removed, replaced), it keeps the content it last read,
// like a descriptor of an unlinked file.
type roFile struct {
	n           *node // the node opened
	passthrough bool

	mu sync.RWMutex // held shared while reading r, exclusively to replace it
	r  *vfs.Reader
}

var (
	_ gofs.FileReader          = (*roFile)(nil)
	_ gofs.FileReleaser        = (*roFile)(nil)
	_ gofs.FilePassthroughFder = (*roFile)(nil)
)

// Read reads from the content.
func (f *roFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	r := f.reader(ctx)
	defer f.mu.RUnlock()
	n, err := r.ReadAt(dest, off)
	if n > 0 || err == nil || isEOF(err) {
		return fuse.ReadResultData(dest[:n]), 0
	}
	return nil, Errno(err)
}

// reader returns the reader of the file's current content, read-locked:
// the one it has, or a new one if the session has since given the file
// other content. A passthrough open keeps its reader: the kernel reads the
// file it registered.
func (f *roFile) reader(ctx context.Context) *vfs.Reader {
	for {
		f.mu.RLock()
		if f.n == nil || f.passthrough {
			return f.r
		}
		p, vn, errno := f.n.resolve(ctx)
		cur := f.r.Node
		if errno != 0 || !vn.IsFile() || (vn.Blob == cur.Blob && vn.Upper == cur.Upper) {
			return f.r // unchanged, or gone: keep what it has
		}
		f.mu.RUnlock()
		nr, err := f.n.m.s.Open(ctx, p)
		if err != nil || nr.Node.Ino != cur.Ino {
			if err == nil {
				nr.Close()
			}
			f.mu.RLock()
			return f.r
		}
		f.mu.Lock()
		if f.r.Node == cur {
			old := f.r
			f.r = nr
			old.Close()
		} else {
			nr.Close() // another read replaced it first
		}
		f.mu.Unlock()
	}
}

// node returns the node the reader reads, with its size.
func (f *roFile) node() vfs.Node {
	f.mu.RLock()
	defer f.mu.RUnlock()
	vn := f.r.Node
	vn.Size = f.r.Size()
	return vn
}

// PassthroughFd lets the kernel read the backing file itself.
func (f *roFile) PassthroughFd() (int, bool) {
	if !f.passthrough {
		return 0, false
	}
	file, ok := f.r.File()
	if !ok {
		return 0, false
	}
	return int(file.Fd()), true
}

// Release closes the reader.
func (f *roFile) Release(ctx context.Context) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Errno(f.r.Close())
}

// rwFile is an open that may write: a session handle.
type rwFile struct {
	h      *vfs.Handle
	append bool
	m      *Mount // with ino: the open for writing fillCache waits for
	ino    uint64
}

var (
	_ gofs.FileReader    = (*rwFile)(nil)
	_ gofs.FileWriter    = (*rwFile)(nil)
	_ gofs.FileFlusher   = (*rwFile)(nil)
	_ gofs.FileFsyncer   = (*rwFile)(nil)
	_ gofs.FileReleaser  = (*rwFile)(nil)
	_ gofs.FileAllocater = (*rwFile)(nil)
)

// Read reads through the handle: it sees the handle's own writes.
func (f *rwFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := f.h.ReadAt(dest, off)
	if n > 0 || err == nil || isEOF(err) {
		return fuse.ReadResultData(dest[:n]), 0
	}
	return nil, Errno(err)
}

// Write writes through the handle; O_APPEND writes go to the end.
func (f *rwFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if f.append {
		vn, err := f.h.Stat()
		if err != nil {
			return 0, Errno(err)
		}
		off = vn.Size
	}
	n, err := f.h.WriteAt(data, off)
	if err != nil {
		return uint32(n), Errno(err)
	}
	return uint32(n), 0
}

// Flush commits the handle's writes to the session (on every close(2)).
func (f *rwFile) Flush(ctx context.Context) syscall.Errno { return Errno(f.h.Flush()) }

// Fsync commits and makes the writes durable.
func (f *rwFile) Fsync(ctx context.Context, flags uint32) syscall.Errno { return Errno(f.h.Sync()) }

// Release closes the handle.
func (f *rwFile) Release(ctx context.Context) syscall.Errno {
	if f.m != nil {
		defer f.m.endWrite(f.ino)
	}
	return Errno(f.h.Close())
}
