//go:build linux

package mount_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
)

// Blocks the consistency writers write: 4 KiB, stamped with a magic, the
// writer, the block's index and a generation, filled with a pattern of
// those, and closed by a CRC of the rest. A torn or misplaced block fails
// the check.
const (
	blockSize  = 4096
	blockMagic = "VFSDBLK1"
)

func makeBlock(writer, index int, gen uint64) []byte {
	b := make([]byte, blockSize)
	copy(b, blockMagic)
	binary.LittleEndian.PutUint64(b[8:], gen)
	binary.LittleEndian.PutUint64(b[16:], uint64(index))
	binary.LittleEndian.PutUint64(b[24:], uint64(writer))
	for i := 32; i < blockSize-4; i++ {
		b[i] = byte(gen*31 + uint64(index)*7 + uint64(i))
	}
	binary.LittleEndian.PutUint32(b[blockSize-4:], crc32.ChecksumIEEE(b[:blockSize-4]))
	return b
}

// checkBlock returns the generation of a valid block of writer at index.
func checkBlock(b []byte, writer, index int) (uint64, error) {
	switch {
	case len(b) != blockSize:
		return 0, fmt.Errorf("block %d is %d bytes", index, len(b))
	case string(b[:8]) != blockMagic:
		return 0, fmt.Errorf("block %d: bad magic %q", index, b[:8])
	case crc32.ChecksumIEEE(b[:blockSize-4]) != binary.LittleEndian.Uint32(b[blockSize-4:]):
		return 0, fmt.Errorf("block %d: torn (CRC mismatch)", index)
	case binary.LittleEndian.Uint64(b[16:]) != uint64(index):
		return 0, fmt.Errorf("block %d holds block %d", index, binary.LittleEndian.Uint64(b[16:]))
	case binary.LittleEndian.Uint64(b[24:]) != uint64(writer):
		return 0, fmt.Errorf("block %d holds writer %d's block", index, binary.LittleEndian.Uint64(b[24:]))
	}
	gen := binary.LittleEndian.Uint64(b[8:])
	if !bytes.Equal(b, makeBlock(writer, index, gen)) {
		return 0, fmt.Errorf("block %d: content is not generation %d's", index, gen)
	}
	return gen, nil
}

// blockWriter writes random blocks of one file through the mount with
// O_WRONLY pwrites, reopening the file now and then (each close commits).
type blockWriter struct {
	id     int
	path   string // in the mount
	blocks int

	issued atomic.Uint64   // the last generation whose write started
	acked  []atomic.Uint64 // per block, the last generation acknowledged
}

func (w *blockWriter) run(stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(w.id), 42))
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for gen := uint64(1); ; gen++ {
		select {
		case <-stop:
			return f.Close()
		default:
		}
		if f == nil || gen%97 == 0 {
			if f != nil {
				if err := f.Close(); err != nil {
					return err
				}
			}
			var err error
			if f, err = os.OpenFile(w.path, os.O_WRONLY, 0); err != nil {
				return err
			}
		}
		i := rng.IntN(w.blocks)
		w.issued.Store(gen)
		if _, err := f.WriteAt(makeBlock(w.id, i, gen), int64(i)*blockSize); err != nil {
			return err
		}
		w.acked[i].Store(gen)
	}
}

// readSnapshotFile returns a file's content in a snapshot.
func readSnapshotFile(t *testing.T, e *toolstest.Env, snap *snapshot.Snapshot, p string) []byte {
	t.Helper()
	n, ok, _ := snap.Tree.Lookup(vfs.MustPath(p))
	require.True(t, ok, "%s in snapshot %s", p, snap.ID)
	b, err := e.Repo.Store().Open(context.Background(), snapshot.Blobs, n.Blob)
	require.NoError(t, err)
	defer b.Close()
	data, err := io.ReadAll(io.NewSectionReader(b, 0, b.Size()))
	require.NoError(t, err)
	require.Equal(t, n.Size, int64(len(data)))
	return data
}

// TestSnapshotWhileWriting takes snapshots in a loop while writers write
// through the mount, and checks every snapshot: each block is a whole
// block of a generation that was written (none torn, none from the
// future), no block is older than what was acknowledged before the
// snapshot started, and no block goes back in time from one snapshot to
// the next. Then the last one equals what the writers left, and restoring
// an earlier one shows it in the mount.
func TestSnapshotWhileWriting(t *testing.T) {
	const writers, blocks = 2, 64
	e, m := mounted(t, nil, mount.Options{})
	dir := m.Dir()
	ws := make([]*blockWriter, writers)
	for i := range ws {
		ws[i] = &blockWriter{id: i, path: filepath.Join(dir, fmt.Sprintf("w%d.dat", i)), blocks: blocks,
			acked: make([]atomic.Uint64, blocks)}
		var init bytes.Buffer
		for b := range blocks {
			init.Write(makeBlock(i, b, 0))
		}
		require.NoError(t, os.WriteFile(ws[i].path, init.Bytes(), 0o644))
	}

	type taken struct {
		snap   *snapshot.Snapshot
		before [][]uint64 // per writer, per block: acknowledged before it started
		issued []uint64   // per writer: the last write started before it returned
	}
	var snaps []taken
	stop := make(chan struct{})
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { errs <- w.run(stop) })
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for len(snaps) < 8 || time.Now().Before(deadline) {
		tk := taken{before: make([][]uint64, writers), issued: make([]uint64, writers)}
		for i, w := range ws {
			tk.before[i] = make([]uint64, blocks)
			for b := range blocks {
				tk.before[i][b] = w.acked[b].Load()
			}
		}
		snap, err := e.Repo.Snapshot(ctx, e.S, fmt.Sprintf("during-%d", len(snaps)))
		require.NoError(t, err)
		for i, w := range ws {
			tk.issued[i] = w.issued.Load()
		}
		tk.snap = snap
		snaps = append(snaps, tk)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d snapshots; writes: %d, %d", len(snaps), ws[0].issued.Load(), ws[1].issued.Load())

	last := make([][]uint64, writers)
	for i := range last {
		last[i] = make([]uint64, blocks)
	}
	for k, tk := range snaps {
		for i := range ws {
			data := readSnapshotFile(t, e, tk.snap, fmt.Sprintf("w%d.dat", i))
			require.Len(t, data, blocks*blockSize, "snapshot %d, writer %d", k, i)
			for b := range blocks {
				gen, err := checkBlock(data[b*blockSize:(b+1)*blockSize], i, b)
				require.NoError(t, err, "snapshot %d, writer %d", k, i)
				require.GreaterOrEqual(t, gen, tk.before[i][b], "snapshot %d, writer %d, block %d lost an acknowledged write", k, i, b)
				require.LessOrEqual(t, gen, tk.issued[i], "snapshot %d, writer %d, block %d: a write from after the snapshot", k, i, b)
				require.GreaterOrEqual(t, gen, last[i][b], "snapshot %d, writer %d, block %d went back in time", k, i, b)
				last[i][b] = gen
			}
		}
	}

	// Quiet now: a snapshot, the mount and the session all hold exactly the
	// last acknowledged generation of every block.
	final, err := e.Repo.Snapshot(ctx, e.S, "final")
	require.NoError(t, err)
	for i, w := range ws {
		var want bytes.Buffer
		for b := range blocks {
			want.Write(makeBlock(i, b, w.acked[b].Load()))
		}
		p := fmt.Sprintf("w%d.dat", i)
		require.True(t, bytes.Equal(want.Bytes(), readSnapshotFile(t, e, final, p)), "final snapshot of %s", p)
		got, err := os.ReadFile(w.path)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want.Bytes(), got), "%s through the mount", p)
		require.True(t, want.String() == e.Read(p), "%s in the session", p)
	}

	// Restoring a snapshot taken mid-write shows it in the mount.
	mid := snaps[len(snaps)/2].snap
	require.NoError(t, e.Repo.Restore(ctx, e.S, mid.ID))
	for i, w := range ws {
		got, err := os.ReadFile(w.path)
		require.NoError(t, err)
		require.True(t, bytes.Equal(readSnapshotFile(t, e, mid, fmt.Sprintf("w%d.dat", i)), got), "restored w%d.dat", i)
	}
}

// TestSnapshotWhileFio takes snapshots while fio writes and verifies
// random blocks: every snapshot freezes the file fio writes, so fio's later
// writes copy it up anew mid-run, and its verification must still pass.
func TestSnapshotWhileFio(t *testing.T) {
	fio := requireTool(t, "fio")
	e, m := mounted(t, nil, mount.Options{})
	dir := m.Dir()
	const size = 8 << 20
	// Started directly: neither its working directory nor the program is in
	// the mount (see runErr).
	cmd := exec.Command(fio, "--name=snap", "--directory="+dir, fmt.Sprintf("--size=%d", size), "--bs=4k",
		"--rw=randwrite", "--direct=0", "--ioengine=psync", "--verify=crc32c", "--verify_fatal=1",
		"--do_verify=1", "--fallocate=none", "--loops=2", "--verify_state_save=0")
	cmd.Dir = t.TempDir() // not the package directory, nor the mount
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var snaps []*snapshot.Snapshot
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-time.After(25 * time.Millisecond):
			snap, serr := e.Repo.Snapshot(ctx, e.S, "fio")
			require.NoError(t, serr)
			snaps = append(snaps, snap)
		}
	}
	require.NoError(t, err, "fio:\n%s", out.String())
	require.NotContains(t, out.String(), "verify: bad")
	t.Logf("%d snapshots during fio", len(snaps))
	for _, snap := range snaps {
		snap.Tree.Walk(vfs.Root, func(p vfs.Path, n vfs.Node) error {
			if n.IsFile() {
				require.True(t, strings.HasPrefix(string(p), "snap."), p)
				require.LessOrEqual(t, n.Size, int64(size))
				_, err := e.Repo.Store().Stat(ctx, snapshot.Blobs, n.Blob)
				require.NoError(t, err, "content of %s in snapshot %s", p, snap.ID)
			}
			return nil
		})
	}
}
