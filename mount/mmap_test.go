//go:build linux

package mount_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/mount"
	"github.com/vfsd/vfsd/vfs"
)

// mmapClientEnv names the file TestMmapClientProcess maps when the test
// binary runs as the mapping's client.
const mmapClientEnv = "VFSD_TEST_MMAP_CLIENT"

// TestMmapCoherence: a shared mapping of a file in the mount sees a tool's
// rewrite of the file (the kernel's pages of it are invalidated), and what a
// program writes through a shared writable mapping reaches the session once
// it syncs the mapping (msync), as on a local file system.
//
// The mapping lives in another process: a page fault on the mount that this
// process serves could wait on a FUSE request that this process's own
// server cannot answer while the fault holds it (a garbage collection's
// stop-the-world, say) — go-fuse's "Deadlocks". The client speaks one line
// per step on its stdout and waits for one on its stdin.
func TestMmapCoherence(t *testing.T) {
	const size = 8192
	e, m := mounted(t, map[string]string{"map.bin": strings.Repeat("a", size)}, mount.Options{})
	path := filepath.Join(m.Dir(), "map.bin")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMmapClientProcess$", "-test.v")
	cmd.Env = append(os.Environ(), mmapClientEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer cancel() // ends the client (and so this test) on any failure
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "mmap: ") {
				require.Equal(t, "mmap: "+want, l)
				return
			}
		}
		t.Fatalf("the mmap client ended before saying %q: %v", want, lines.Err())
	}

	expect("mapped a a")
	// A tool rewrites the file, same size: the mapping shows the new bytes.
	callOK(t, e, "write_file", map[string]any{"path": "map.bin", "inline_text": strings.Repeat("b", size)})
	fmt.Fprintln(stdin, "rewritten")
	expect("saw b b")
	// The program wrote through the mapping and synced it: the session has it.
	expect("synced")
	got, _, err := e.S.ReadFile(t.Context(), vfs.MustPath("map.bin"))
	require.NoError(t, err)
	require.Len(t, got, size)
	require.Equal(t, "written through mmap", string(got[100:120]))
	require.Equal(t, strings.Repeat("b", 100), string(got[:100]))
	stdin.Close()
}

// TestMmapClientProcess is TestMmapCoherence's client, run in a process of
// its own; by itself it does nothing.
func TestMmapClientProcess(t *testing.T) {
	path := os.Getenv(mmapClientEnv)
	if path == "" {
		t.Skip("the client side of TestMmapCoherence, run by it in a process of its own")
	}
	const size = 8192
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	fmt.Printf("mmap: mapped %c %c\n", mem[0], mem[size-1])

	in := bufio.NewScanner(os.Stdin)
	require.True(t, in.Scan(), "the test said nothing")
	require.Equal(t, "rewritten", in.Text())
	deadline := time.Now().Add(5 * time.Second)
	for (mem[0] != 'b' || mem[size-1] != 'b') && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("mmap: saw %c %c\n", mem[0], mem[size-1])

	copy(mem[100:], "written through mmap")
	require.NoError(t, unix.Msync(mem, unix.MS_SYNC))
	require.NoError(t, f.Sync())
	fmt.Println("mmap: synced")
}
