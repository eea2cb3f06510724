package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/vfs"
)

// The crash test runs a writer in a child process (this test binary again,
// with crashChildEnv set), kills it with SIGKILL mid-stream, and checks what
// recovery finds: every write the child acknowledged (printed after it
// returned) is there, and every file holds exactly one whole write.
const crashChildEnv = "VFSD_CRASH_CHILD_DIR"

func openRepo(t testing.TB, dir string) (*snapshot.Repo, func()) {
	store, err := snapshot.OpenLocal(filepath.Join(dir, "store"))
	require.NoError(t, err)
	r, err := snapshot.OpenRepo(context.Background(), store, filepath.Join(dir, "sessions"), snapshot.RepoOptions{})
	require.NoError(t, err)
	return r, func() { r.Close(); store.Close() }
}

// payload is write i's content for a path: self-describing, so a reader can
// tell which write a file holds and whether it is whole.
func payload(path string, i int) string {
	return fmt.Sprintf("%s#%d#%s#end", path, i, strings.Repeat("x", i%4096))
}

func parsePayload(path, content string) (int, bool) {
	parts := strings.Split(content, "#")
	if len(parts) != 4 || parts[0] != path || parts[3] != "end" {
		return 0, false
	}
	i, err := strconv.Atoi(parts[1])
	if err != nil || content != payload(path, i) {
		return 0, false
	}
	return i, true
}

// TestCrashChild is the writer; it only runs as the child of TestCrashRecovery.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestCrashRecovery")
	}
	ctx := context.Background()
	r, done := openRepo(t, dir)
	defer done()
	s, err := r.Session("crash")
	if err != nil {
		s, err = r.NewSession(ctx, snapshot.SessionOptions{ID: "crash"})
		require.NoError(t, err)
	}
	_, err = s.Mkdir(ctx, vfs.MustPath("h"), vfs.MkdirOptions{Parents: true})
	require.NoError(t, err)
	start, _ := strconv.Atoi(os.Getenv("VFSD_CRASH_START"))
	out := bufio.NewWriter(os.Stdout)
	for i := start; ; i++ {
		var path string
		switch i % 10 {
		case 7: // a write through a handle, made durable with Sync
			path = fmt.Sprintf("h/%d", i%3)
			h, err := s.OpenFile(ctx, vfs.MustPath(path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			require.NoError(t, err)
			_, err = h.WriteAt([]byte(payload(path, i)), 0)
			require.NoError(t, err)
			require.NoError(t, h.Sync())
			require.NoError(t, h.Close())
		case 9:
			_, err := r.Snapshot(ctx, s, "")
			require.NoError(t, err)
			continue
		default:
			path = fmt.Sprintf("w/%d", i%13)
			_, err := s.WriteFile(ctx, vfs.MustPath(path), strings.NewReader(payload(path, i)), vfs.WriteOptions{CreateParents: true})
			require.NoError(t, err)
		}
		fmt.Fprintf(out, "ack %d %s\n", i, path)
		out.Flush()
	}
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills writer processes")
	}
	dir := t.TempDir()
	acked := map[string]int{} // last acknowledged write per path
	next := 0
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("VFSD_CRASH_START=%d", next))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		killAfter := 40 + round*37
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			var i int
			var path string
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %s", &i, &path); err != nil {
				continue
			}
			acked[path] = i
			next = i + 1
			if n++; n == killAfter {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
		}
		_ = cmd.Wait()
		require.GreaterOrEqual(t, n, killAfter, "the child died on its own")
		next += 10 // writes issued but not acknowledged may have landed

		verifyRecovered(t, dir, acked, next)
	}
}

func verifyRecovered(t *testing.T, dir string, acked map[string]int, maxIssued int) {
	t.Helper()
	r, done := openRepo(t, dir)
	defer done()
	s, err := r.Session("crash")
	require.NoError(t, err, "the session survives the crash")
	for path, last := range acked {
		b, _, err := s.ReadFile(context.Background(), vfs.MustPath(path))
		require.NoError(t, err, "acknowledged file %s is lost", path)
		i, ok := parsePayload(path, string(b))
		require.True(t, ok, "%s holds a torn or foreign write: %.60q", path, b)
		require.GreaterOrEqual(t, i, last, "%s lost acknowledged write %d (holds %d)", path, last, i)
		require.Less(t, i, maxIssued+10, "%s holds a write that was never issued", path)
	}
	// Recovery is deterministic: replaying again gives the same tree.
	want := s.Tree().Encode()
	done()
	r2, done2 := openRepo(t, dir)
	defer done2()
	s2, err := r2.Session("crash")
	require.NoError(t, err)
	require.Equal(t, want, s2.Tree().Encode())
}
