package snapshot_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// bucket is a remote as an S3 bucket shared with other tenants is: a name
// may hold any content (anyone with access writes any key), a Put
// overwrites whatever is there, nothing is verified on the way in or out,
// and a listing tells each object's size, time and ETag (the MD5 of its
// content, as S3 servers make it for objects uploaded whole), as do Put
// (PutInfo) and Open. Tests plant objects with Plant, as another tenant
// would.
type bucket struct {
	mu      sync.Mutex
	objects map[snapshot.Namespace]map[vfs.Hash]*bucketObj
	// undeletable objects fail Delete, as an object under a legal hold or
	// a deny policy does.
	undeletable map[vfs.Hash]bool
	opens       atomic.Int64 // Open calls, by anyone
}

type bucketObj struct {
	data []byte
	mod  time.Time
}

var (
	_ snapshot.Store      = (*bucket)(nil)
	_ snapshot.InfoLister = (*bucket)(nil)
	_ snapshot.Toucher    = (*bucket)(nil)
	_ snapshot.InfoPutter = (*bucket)(nil)
)

func newBucket() *bucket {
	b := &bucket{objects: map[snapshot.Namespace]map[vfs.Hash]*bucketObj{}, undeletable: map[vfs.Hash]bool{}}
	for _, ns := range snapshot.Namespaces {
		b.objects[ns] = map[vfs.Hash]*bucketObj{}
	}
	return b
}

func (b *bucket) String() string { return "test-bucket" }

// Plant stores data under h, whatever h's content is, as another tenant of
// the bucket can, dated mod (now when zero).
func (b *bucket) Plant(ns snapshot.Namespace, h vfs.Hash, data []byte, mod time.Time) {
	if mod.IsZero() {
		mod = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[ns][h] = &bucketObj{data: bytes.Clone(data), mod: mod}
}

// raw returns what the bucket holds under h.
func (b *bucket) raw(ns snapshot.Namespace, h vfs.Hash) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.objects[ns][h]
	if o == nil {
		return nil, false
	}
	return o.data, true
}

func (b *bucket) Put(ctx context.Context, ns snapshot.Namespace, r io.Reader, opts snapshot.PutOptions) (vfs.Hash, int64, error) {
	o, err := b.PutInfo(ctx, ns, r, opts)
	return o.Hash, o.Size, err
}

func (b *bucket) PutInfo(ctx context.Context, ns snapshot.Namespace, r io.Reader, _ snapshot.PutOptions) (snapshot.ObjectInfo, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return snapshot.ObjectInfo{}, err
	}
	h := vfs.HashOf(data)
	b.Plant(ns, h, data, time.Time{})
	return snapshot.ObjectInfo{Hash: h, Size: int64(len(data)), Modified: time.Now(), ETag: md5Hex(data)}, nil
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

func (b *bucket) Open(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (vfs.Blob, error) {
	b.opens.Add(1)
	data, ok := b.raw(ns, h)
	if !ok {
		return nil, &vfs.Error{Op: "open " + string(ns), Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such object"}
	}
	return taggedBlob{memBlob{bytes.NewReader(data)}, md5Hex(data)}, nil
}

func (b *bucket) Stat(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) (int64, error) {
	data, ok := b.raw(ns, h)
	if !ok {
		return 0, &vfs.Error{Op: "stat " + string(ns), Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such object"}
	}
	return int64(len(data)), nil
}

var errUndeletable = errors.New("access denied: object under legal hold (test)")

func (b *bucket) Delete(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.undeletable[h] {
		return fmt.Errorf("delete %s %s: %w", ns, h.Short(), errUndeletable)
	}
	delete(b.objects[ns], h)
	return nil
}

func (b *bucket) List(ctx context.Context, ns snapshot.Namespace, fn func(vfs.Hash, int64) error) error {
	return b.ListInfo(ctx, ns, func(o snapshot.ObjectInfo) error { return fn(o.Hash, o.Size) })
}

// ListInfo lists in key order, as S3 does, from a copy taken first.
func (b *bucket) ListInfo(ctx context.Context, ns snapshot.Namespace, fn func(snapshot.ObjectInfo) error) error {
	b.mu.Lock()
	var out []snapshot.ObjectInfo
	for h, o := range b.objects[ns] {
		out = append(out, snapshot.ObjectInfo{Hash: h, Size: int64(len(o.data)), Modified: o.mod, ETag: md5Hex(o.data)})
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Hash[:], out[j].Hash[:]) < 0 })
	for _, o := range out {
		if err := fn(o); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (b *bucket) Touch(ctx context.Context, ns snapshot.Namespace, h vfs.Hash) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.objects[ns][h]
	if o == nil {
		return &vfs.Error{Op: "touch " + string(ns), Path: h.String(), Code: vfs.CodeNotFound, Msg: "no such object"}
	}
	o.mod = time.Now()
	return nil
}

func (b *bucket) Sync(context.Context) error { return nil }
func (b *bucket) Close() error               { return nil }

// memBlob reads bytes in memory.
type memBlob struct{ r *bytes.Reader }

func (m memBlob) ReadAt(p []byte, off int64) (int, error) { return m.r.ReadAt(p, off) }
func (m memBlob) Size() int64                             { return m.r.Size() }
func (m memBlob) Close() error                            { return nil }

// taggedBlob is a blob that knows the ETag it was read with.
type taggedBlob struct {
	memBlob
	etag string
}

func (t taggedBlob) ETag() string { return t.etag }

// age dates every object of the bucket d ago, as if stored then.
func (b *bucket) age(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, objs := range b.objects {
		for _, o := range objs {
			o.mod = time.Now().Add(-d)
		}
	}
}

// has reports whether the bucket holds an object under h.
func (b *bucket) has(ns snapshot.Namespace, h vfs.Hash) bool {
	_, ok := b.raw(ns, h)
	return ok
}
