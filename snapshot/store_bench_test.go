package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/storetest"
	"github.com/vfsd/vfsd/vfs"
)

const (
	benchObjectSize = 8 << 10
	// benchLargeSize is larger than the content Put buffers in memory, so
	// that Put streams it to a temporary file.
	benchLargeSize = 4 << 20
)

// BenchmarkLocalPut stores distinct 8 KiB objects: durable (fdatasync of the
// file and fsync of its directory per Put), deferred (no sync at all), and
// deferred with a Sync (syncfs) every 256 Puts, as a bulk writer would.
// The store lives in b.TempDir(); set TMPDIR to measure another filesystem.
func BenchmarkLocalPut(b *testing.B) {
	for _, bc := range []struct {
		name      string
		deferred  bool
		syncEvery int
	}{
		{"durable", false, 0},
		{"deferred", true, 0},
		{"deferred+sync256", true, 256},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchPutDistinct(b, benchObjectSize, bc.deferred, bc.syncEvery)
		})
	}
}

// BenchmarkLocalPutLarge stores distinct 4 MiB objects, which Put streams
// to a temporary file (durable and deferred).
func BenchmarkLocalPutLarge(b *testing.B) {
	for _, bc := range []struct {
		name     string
		deferred bool
	}{
		{"durable", false},
		{"deferred", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchPutDistinct(b, benchLargeSize, bc.deferred, 0)
		})
	}
}

// benchPutDistinct Puts size bytes of new content per iteration.
func benchPutDistinct(b *testing.B, size int, deferred bool, syncEvery int) {
	ctx := context.Background()
	s := benchOpenLocal(b)
	data := storetest.Random(42, size)
	opts := snapshot.PutOptions{Deferred: deferred}
	var r bytes.Reader
	b.SetBytes(int64(size))
	i := uint64(0)
	for b.Loop() {
		binary.LittleEndian.PutUint64(data, i) // distinct content: no dedup
		i++
		r.Reset(data)
		if _, _, err := s.Put(ctx, snapshot.Blobs, &r, opts); err != nil {
			b.Fatal(err)
		}
		if syncEvery > 0 && i%uint64(syncEvery) == 0 {
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLocalPutDedup Puts content that is already stored (8 KiB, and
// 4 MiB, which Put streams): a durable Put syncs the existing object and its
// directory, a deferred one does not.
func BenchmarkLocalPutDedup(b *testing.B) {
	for _, bc := range []struct {
		name     string
		size     int
		deferred bool
	}{
		{"durable", benchObjectSize, false},
		{"deferred", benchObjectSize, true},
		{"4MiB/durable", benchLargeSize, false},
		{"4MiB/deferred", benchLargeSize, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s := benchOpenLocal(b)
			data := storetest.Random(43, bc.size)
			if _, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader(data), snapshot.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			opts := snapshot.PutOptions{Deferred: bc.deferred}
			var r bytes.Reader
			b.SetBytes(int64(bc.size))
			for b.Loop() {
				r.Reset(data)
				if _, _, err := s.Put(ctx, snapshot.Blobs, &r, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchOpenLocal opens a store in b.TempDir(). VFSD_BENCH_TEMP=named or
// unnamed makes its Puts use those temporary files, whatever the
// filesystem (see snapshot.LocalTempFiles).
func benchOpenLocal(b *testing.B) *snapshot.LocalStore {
	b.Helper()
	switch v := os.Getenv("VFSD_BENCH_TEMP"); v {
	case "":
	case "named", "unnamed":
		tf := snapshot.LocalTempNamed
		if v == "unnamed" {
			tf = snapshot.LocalTempUnnamed
		}
		prev := snapshot.SetLocalTempFiles(tf)
		b.Cleanup(func() { snapshot.SetLocalTempFiles(prev) })
	default:
		b.Fatalf("VFSD_BENCH_TEMP=%q: want named or unnamed", v)
	}
	s, err := snapshot.OpenLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkLocalOpenRead opens an 8 KiB object, reads it whole and closes
// it, cycling over 1024 stored objects (warm page cache).
func BenchmarkLocalOpenRead(b *testing.B) {
	ctx := context.Background()
	s := benchOpenLocal(b)
	const objects = 1024
	hashes := make([]vfs.Hash, objects)
	data := storetest.Random(7, benchObjectSize)
	for i := range hashes {
		binary.LittleEndian.PutUint64(data, uint64(i))
		h, _, err := s.Put(ctx, snapshot.Blobs, bytes.NewReader(data), snapshot.PutOptions{Deferred: true})
		if err != nil {
			b.Fatal(err)
		}
		hashes[i] = h
	}
	buf := make([]byte, benchObjectSize)
	b.SetBytes(benchObjectSize)
	i := 0
	for b.Loop() {
		blob, err := s.Open(ctx, snapshot.Blobs, hashes[i%objects])
		if err != nil {
			b.Fatal(err)
		}
		if n, err := blob.ReadAt(buf, 0); n != benchObjectSize || (err != nil && err != io.EOF) {
			b.Fatal(n, err)
		}
		if err := blob.Close(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
