package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/snapshot/storetest"
	"github.com/vfsd/vfsd/vfs"
)

const benchObjectSize = 8 << 10

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
			ctx := context.Background()
			s, err := snapshot.OpenLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := storetest.Random(42, benchObjectSize)
			opts := snapshot.PutOptions{Deferred: bc.deferred}
			var r bytes.Reader
			b.SetBytes(benchObjectSize)
			i := uint64(0)
			for b.Loop() {
				binary.LittleEndian.PutUint64(data, i) // distinct content: no dedup
				i++
				r.Reset(data)
				if _, _, err := s.Put(ctx, snapshot.Blobs, &r, opts); err != nil {
					b.Fatal(err)
				}
				if bc.syncEvery > 0 && i%uint64(bc.syncEvery) == 0 {
					if err := s.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkLocalOpenRead opens an 8 KiB object, reads it whole and closes
// it, cycling over 1024 stored objects (warm page cache).
func BenchmarkLocalOpenRead(b *testing.B) {
	ctx := context.Background()
	s, err := snapshot.OpenLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
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
