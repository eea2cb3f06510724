package vfs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/vfstest"
)

// remoteBlobs is a FetchingBlobStore whose "remote" blobs come only through
// Fetch (or a blocking Open), each fetch waiting until the gate opens: a
// remote that is slow for as long as a test wants.
type remoteBlobs struct {
	*vfstest.Blobs
	entered chan struct{} // one send per fetch that starts waiting
	gate    chan struct{} // closed: fetches go through
	fail    error         // when set, fetches fail with it instead
	evict   bool          // when set, a fetched blob is gone again at once

	mu      sync.Mutex
	remote  map[vfs.Hash]bool
	fetches int
}

func newRemoteBlobs() *remoteBlobs {
	return &remoteBlobs{Blobs: vfstest.NewBlobs(), entered: make(chan struct{}, 16), gate: make(chan struct{}), remote: map[vfs.Hash]bool{}}
}

// leave makes blob h remote: not local until fetched.
func (r *remoteBlobs) leave(h vfs.Hash) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remote[h] = true
}

func (r *remoteBlobs) isRemote(h vfs.Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.remote[h]
}

func (r *remoteBlobs) OpenLocal(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	if r.isRemote(h) {
		return nil, vfs.ErrNotLocal
	}
	return r.Blobs.Open(ctx, h)
}

func (r *remoteBlobs) Fetch(ctx context.Context, h vfs.Hash) error {
	r.entered <- struct{}{}
	select {
	case <-r.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches++
	if r.fail != nil {
		return r.fail
	}
	if !r.evict {
		delete(r.remote, h)
	}
	return nil
}

// Open is what a store without OpenLocal would do: fetch, holding
// whatever lock its caller holds.
func (r *remoteBlobs) Open(ctx context.Context, h vfs.Hash) (vfs.Blob, error) {
	if r.isRemote(h) {
		r.entered <- struct{}{}
		<-r.gate
		r.mu.Lock()
		delete(r.remote, h)
		r.mu.Unlock()
	}
	return r.Blobs.Open(ctx, h)
}

// withRemoteFile creates a session over blobs holding remote.txt, whose
// blob is left remote, and local.txt; it returns the session and
// remote.txt's node.
func withRemoteFile(t *testing.T, blobs *remoteBlobs) (*vfs.Session, vfs.Node) {
	t.Helper()
	s, err := vfs.Create(ctx, vfstest.Options(t, blobs), vfs.Tree{}, "")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	res := write(t, s, "remote.txt", "remote content")
	write(t, s, "local.txt", "local content")
	blobs.leave(res.Node.Blob)
	return s, res.Node
}

// TestSlowFetchHoldsUpOnlyItsRead: a read, an append, a handle's read and a
// handle's first write of a file whose blob is still remote wait for the
// fetch with no lock held: meanwhile the session reads, writes and creates
// other files. Once the fetch completes, each sees the file's content.
func TestSlowFetchHoldsUpOnlyItsRead(t *testing.T) {
	tests := []struct {
		name string
		op   func(s *vfs.Session) (string, error)
		want string
	}{
		{"ReadFile", func(s *vfs.Session) (string, error) {
			b, _, err := s.ReadFile(ctx, p("remote.txt"))
			return string(b), err
		}, "remote content"},
		{"append", func(s *vfs.Session) (string, error) {
			_, err := s.WriteFile(ctx, p("remote.txt"), strings.NewReader("+more"), vfs.WriteOptions{Mode: vfs.WriteAppend})
			if err != nil {
				return "", err
			}
			b, _, err := s.ReadFile(ctx, p("remote.txt"))
			return string(b), err
		}, "remote content+more"},
		{"Handle.ReadAt", func(s *vfs.Session) (string, error) {
			h, err := s.OpenFile(ctx, p("remote.txt"), os.O_RDONLY, 0)
			if err != nil {
				return "", err
			}
			defer h.Close()
			buf := make([]byte, 64)
			n, err := h.ReadAt(buf, 0)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return string(buf[:n]), err
		}, "remote content"},
		{"Handle.WriteAt copies up", func(s *vfs.Session) (string, error) {
			h, err := s.OpenFile(ctx, p("remote.txt"), os.O_RDWR, 0)
			if err != nil {
				return "", err
			}
			if _, err := h.WriteAt([]byte("REMOTE"), 0); err != nil {
				h.Close()
				return "", err
			}
			if err := h.Close(); err != nil {
				return "", err
			}
			b, _, err := s.ReadFile(ctx, p("remote.txt"))
			return string(b), err
		}, "REMOTE content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blobs := newRemoteBlobs()
			s, _ := withRemoteFile(t, blobs)

			type result struct {
				got string
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := tt.op(s)
				done <- result{got, err}
			}()
			select {
			case <-blobs.entered: // the fetch has started, and waits
			case <-time.After(10 * time.Second):
				t.Fatal("the read never fetched")
			}

			others := make(chan error, 1)
			go func() {
				others <- func() error {
					if got, _, err := s.ReadFile(ctx, p("local.txt")); err != nil || string(got) != "local content" {
						return errors.Join(err, errors.New("local.txt read "+string(got)))
					}
					if _, err := s.WriteFile(ctx, p("new.txt"), strings.NewReader("new"), vfs.WriteOptions{}); err != nil {
						return err
					}
					if _, err := s.Mkdir(ctx, p("dir"), vfs.MkdirOptions{}); err != nil {
						return err
					}
					_, err := s.Stat(ctx, p("remote.txt"))
					return err
				}()
			}()
			select {
			case err := <-others:
				require.NoError(t, err)
			case <-time.After(10 * time.Second): // a hang detector, not a timing bar
				close(blobs.gate)
				t.Fatal("the session's other calls waited for the fetch")
			}
			select {
			case r := <-done:
				t.Fatalf("the read did not wait for its fetch: %q, %v", r.got, r.err)
			default:
			}

			close(blobs.gate)
			r := <-done
			require.NoError(t, r.err)
			require.Equal(t, tt.want, r.got)
		})
	}
}

// TestFetchFailure: a fetch that fails is the read's io error, naming the
// operation and the path; the session is as it was.
func TestFetchFailure(t *testing.T) {
	blobs := newRemoteBlobs()
	blobs.fail = errors.New("remote unreachable (test)")
	close(blobs.gate)
	s, before := withRemoteFile(t, blobs)

	_, _, err := s.ReadFile(ctx, p("remote.txt"))
	require.ErrorContains(t, err, "remote unreachable (test)")
	var e *vfs.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, vfs.CodeIO, e.Code)
	require.Equal(t, "read", e.Op)
	require.Equal(t, "/remote.txt", e.Path)
	require.False(t, errors.Is(err, vfs.ErrNotLocal), "the fetch's error, not the local miss")

	_, err = s.WriteFile(ctx, p("remote.txt"), strings.NewReader("+"), vfs.WriteOptions{Mode: vfs.WriteAppend})
	require.ErrorContains(t, err, "remote unreachable (test)")
	n, err := s.Stat(ctx, p("remote.txt"))
	require.NoError(t, err)
	require.Equal(t, before.Version, n.Version, "a failed append changes nothing")
}

// TestFetchedBlobEvictedAgain: when every fetched blob is gone again before
// it can be opened (a cache too small for it), the read still completes, by
// fetching as part of its last try.
func TestFetchedBlobEvictedAgain(t *testing.T) {
	blobs := newRemoteBlobs()
	blobs.evict = true
	close(blobs.gate)
	s, _ := withRemoteFile(t, blobs)
	require.Equal(t, "remote content", read(t, s, "remote.txt"))
	blobs.mu.Lock()
	defer blobs.mu.Unlock()
	require.Equal(t, 3, blobs.fetches, "three fetches ahead, then the read through Open")
}
