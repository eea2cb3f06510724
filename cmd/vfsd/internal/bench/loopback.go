//go:build linux

package bench

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// noPassthroughNode is go-fuse's loopback node whose opens never use FUSE
// passthrough: the loopback process serves every read and write itself, as
// vfsd does. It is the like-for-like baseline next to the loopback with
// passthrough, whose reads and writes bypass its process.
type noPassthroughNode struct {
	gofs.LoopbackNode
}

var (
	_ gofs.NodeOpener  = (*noPassthroughNode)(nil)
	_ gofs.NodeCreater = (*noPassthroughNode)(nil)
)

// newNoPassthroughRoot is gofs.NewLoopbackRoot for noPassthroughNode.
func newNoPassthroughRoot(dir string) (gofs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, err
	}
	root := &gofs.LoopbackRoot{Path: dir, Dev: uint64(st.Dev), NewNode: newNoPassthroughNode}
	root.RootNode = newNoPassthroughNode(root, nil, "", &st)
	return root.RootNode, nil
}

// newNoPassthroughNode is a LoopbackRoot.NewNode for noPassthroughNode.
func newNoPassthroughNode(root *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
	return &noPassthroughNode{gofs.LoopbackNode{RootData: root}}
}

// Open opens as the loopback does, declining passthrough.
func (n *noPassthroughNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return withoutPassthrough(fh), fuseFlags, errno
}

// Create creates as the loopback does, declining passthrough.
func (n *noPassthroughNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, withoutPassthrough(fh), fuseFlags, errno
}

// noPassthroughFile is a loopback file that declines passthrough.
type noPassthroughFile struct {
	*gofs.LoopbackFile
}

// PassthroughFd declines: the kernel sends reads and writes to the server.
func (noPassthroughFile) PassthroughFd() (int, bool) { return 0, false }

func withoutPassthrough(fh gofs.FileHandle) gofs.FileHandle {
	if lf, ok := fh.(*gofs.LoopbackFile); ok {
		return noPassthroughFile{lf}
	}
	return fh
}
