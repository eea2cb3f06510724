//go:build linux

package tests

// Helpers of the hostile-mount tests (hostile_mount_test.go): host trees to
// compare before and after, secrets to look for, tool calls that collect
// their answers, and the hostile program, which runs as a separate process
// (this test binary run again with VFSD_HOSTILE_HELPER set: see init), so
// that the FUSE mount it attacks is never served by the process touching
// it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vfsd/vfsd/client"
)

// randomSecret is text no session holds: "vfsd-host-secret-" and 32 hex
// digits.
func randomSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "vfsd-host-secret-" + hex.EncodeToString(b)
}

// victimTree makes a host tree outside the mount and the daemon's data
// directory for the attacks to aim at: files named like the session's (a,
// b, c), a subdirectory, a secret file (mode 0600), odd modes and old
// times, so that any change shows. It returns the tree's root and the
// secret.
func victimTree(t testing.TB) (string, string) {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.MkdirAll(filepath.Join(v, "sub", "deeper"), 0o700))
	secret := randomSecret(t)
	files := map[string]string{
		"a": "canary a\n", "b": "canary b\n", "c": "canary c\n", "x": "canary x\n",
		"sub/inner": "canary inner\n", "sub/deeper/f0": "canary deeper\n",
		"secret.txt": secret + "\n",
	}
	for name, content := range files {
		mode := fs.FileMode(0o640)
		if name == "secret.txt" {
			mode = 0o600
		}
		require.NoError(t, os.WriteFile(filepath.Join(v, name), []byte(content), mode))
	}
	old := time.Unix(1_500_000_000, 0)
	require.NoError(t, filepath.WalkDir(v, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p != v && d.IsDir() {
			defer func() { require.NoError(t, os.Chtimes(p, old, old)) }()
		}
		if !d.IsDir() {
			require.NoError(t, os.Chtimes(p, old, old))
		}
		return nil
	}))
	require.NoError(t, os.Chmod(v, 0o711))
	require.NoError(t, os.Chtimes(v, old, old))
	return v, secret
}

// toolAnswer is one tool call's outcome, kept whole for the secret checks.
type toolAnswer struct {
	tool   string
	params string
	status string
	code   string
	body   string
	err    error
}

func (a toolAnswer) ok() bool { return a.err == nil && a.status == "ok" }

func (a toolAnswer) String() string {
	if a.err != nil {
		return fmt.Sprintf("%s %s: %v", a.tool, a.params, a.err)
	}
	return fmt.Sprintf("%s %s: %s", a.tool, a.params, a.body)
}

// call runs tool name with params (marshalled to JSON) on session id.
func call(ctx context.Context, c *client.Client, id, name string, params any) toolAnswer {
	raw, err := json.Marshal(params)
	if err != nil {
		panic(err)
	}
	a := toolAnswer{tool: name, params: string(raw)}
	if len(a.params) > 200 {
		a.params = a.params[:200] + "…"
	}
	r, err := c.CallTool(ctx, id, name, raw)
	if err != nil {
		a.err = err
		return a
	}
	a.status, a.body = r.Status, string(r.JSON)
	var head struct {
		ErrorCode string `json:"error_code"`
	}
	_ = json.Unmarshal(r.JSON, &head)
	a.code = head.ErrorCode
	return a
}

// mustCall is call that requires the call to succeed.
func mustCall(t testing.TB, ctx context.Context, c *client.Client, id, name string, params any) toolAnswer {
	t.Helper()
	a := call(ctx, c, id, name, params)
	require.True(t, a.ok(), "%s", a)
	return a
}

// sessionEntry is one entry list_directory reports.
type sessionEntry struct {
	Path      string `json:"path"`
	Kind      string `json:"kind"`
	Target    string `json:"target"`
	SizeBytes int64  `json:"size_bytes"`
}

// sessionEntries lists every entry of session id through list_directory,
// a directory at a time.
func sessionEntries(t testing.TB, ctx context.Context, c *client.Client, id string) []sessionEntry {
	t.Helper()
	var all []sessionEntry
	for queue := []string{""}; len(queue) > 0; queue = queue[1:] {
		a := call(ctx, c, id, "list_directory", map[string]any{"path": queue[0], "max_entries": 5000})
		if !a.ok() && queue[0] != "" {
			t.Logf("final walk: %s", a) // a symlink to a directory, say
			continue
		}
		require.True(t, a.ok(), "%s", a)
		var rec struct {
			Entries   []sessionEntry `json:"entries"`
			Truncated bool           `json:"truncated"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &rec))
		require.False(t, rec.Truncated, "directory %q of the session has more than 5000 entries", queue[0])
		for _, e := range rec.Entries {
			all = append(all, e)
			if e.Kind == "dir" {
				queue = append(queue, e.Path)
			}
		}
		require.Less(t, len(all), 50000, "the session has grown past 50000 entries")
	}
	return all
}

// requireNoSecretInSession walks session id through the tools (a listing,
// every file read whole, grep) and fails if any name, symlink target or
// content holds one of secrets.
func requireNoSecretInSession(t testing.TB, ctx context.Context, c *client.Client, id string, secrets map[string]string) {
	t.Helper()
	var found []string
	entries := sessionEntries(t, ctx, c, id)
	for _, e := range entries {
		for what, s := range secrets {
			if strings.Contains(e.Path, s) || strings.Contains(e.Target, s) {
				found = append(found, fmt.Sprintf("%s is named after %s", e.Path, what))
			}
		}
		if e.Kind != "file" {
			continue
		}
		content := readWhole(t, ctx, c, id, e.Path)
		for what, s := range secrets {
			if bytes.Contains(content, []byte(s)) {
				found = append(found, fmt.Sprintf("%s holds %s", e.Path, what))
			}
		}
	}
	for what, s := range secrets {
		a := mustCall(t, ctx, c, id, "grep", map[string]any{"pattern": s, "fixed_strings": true, "output": "files_with_matches",
			"respect_gitignore": false})
		var rec struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &rec))
		for _, f := range rec.Files {
			found = append(found, fmt.Sprintf("grep finds %s in %s", what, f.Path))
		}
	}
	require.Empty(t, found, "foreign host content entered session %s (%d entries)", id, len(entries))
}

// readWhole reads a session file whole through read_file, a page (inline)
// at a time; a file that cannot be read is logged and empty.
func readWhole(t testing.TB, ctx context.Context, c *client.Client, id, path string) []byte {
	t.Helper()
	const page = 32 << 10
	var content []byte
	for len(content) < 64<<20 {
		a := call(ctx, c, id, "read_file", map[string]any{"path": path, "offset_bytes": len(content), "max_bytes": page,
			"encoding": "bytes", "output_mode": "require_inline"})
		if !a.ok() {
			t.Logf("final walk: %s", a)
			break
		}
		var rec struct {
			InlineBytes []byte `json:"inline_bytes"`
			Truncated   bool   `json:"truncated"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &rec))
		content = append(content, rec.InlineBytes...)
		if !rec.Truncated || len(rec.InlineBytes) == 0 {
			break
		}
	}
	return content
}

// requireNoSecretInAnswers fails if a tool's answer holds one of secrets.
func requireNoSecretInAnswers(t testing.TB, answers []toolAnswer, secrets map[string]string) {
	t.Helper()
	var leaks []string
	for _, a := range answers {
		for what, s := range secrets {
			if strings.Contains(a.body, s) {
				leaks = append(leaks, fmt.Sprintf("%s answered %s: %.300s", a.tool, what, a.body))
			}
		}
	}
	if len(leaks) > 5 {
		leaks = append(leaks[:5], fmt.Sprintf("and %d more", len(leaks)-5))
	}
	require.Empty(t, leaks, "a tool's answer holds host content")
}

// hostileSeconds is how long the hostile-mount stress test runs per
// backend: VFSD_HOSTILE_SECONDS, 15 by default.
func hostileSeconds(t testing.TB) time.Duration {
	v := os.Getenv("VFSD_HOSTILE_SECONDS")
	if v == "" {
		return 15 * time.Second
	}
	var n float64
	_, err := fmt.Sscan(v, &n)
	require.NoError(t, err, "VFSD_HOSTILE_SECONDS=%q", v)
	require.True(t, n > 0 && n <= 600, "VFSD_HOSTILE_SECONDS=%q: between 0 and 600", v)
	return time.Duration(n * float64(time.Second))
}

// ---- the hostile program ----

// hostileConfig tells the hostile program what to do.
type hostileConfig struct {
	// Mode: "swapdir" replaces Dirs (in Mount) with symlinks to Targets[0]
	// and back, in a loop; "exchange" exchanges each pair of Pairs (names
	// in Mount) with RENAME_EXCHANGE in a loop; "chaos" does everything at
	// random under every directory of Mount (renames, exchanges, symlinks
	// to Targets swapped in for files and directories).
	Mode    string
	Mount   string
	Dirs    []string
	Pairs   [][2]string
	Targets []string
	// Until is when the program stops by itself (unix nanoseconds), its
	// parent dead or not.
	Until int64
	Seed  uint64
}

// hostileReport is what the hostile program did, on its standard output.
type hostileReport struct {
	Ops    map[string]int `json:"ops"`
	Errors int            `json:"errors"`
}

func init() {
	if os.Getenv("VFSD_HOSTILE_HELPER") == "" {
		return
	}
	var cfg hostileConfig
	if err := json.Unmarshal([]byte(os.Getenv("VFSD_HOSTILE_HELPER")), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hostile helper:", err)
		os.Exit(2)
	}
	os.Exit(runHostile(cfg))
}

// runHostile is the hostile program: it works until cfg.Until or until its
// standard input closes (the parent asks it to stop, or died).
func runHostile(cfg hostileConfig) int {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	until := time.Unix(0, cfg.Until)
	go func() { // the last resort: never outlive the deadline by much
		time.Sleep(time.Until(until) + 10*time.Second)
		os.Exit(3)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return time.Now().After(until)
		}
	}
	rep := hostileReport{Ops: map[string]int{}}
	rng := mrand.New(mrand.NewPCG(cfg.Seed, 7))
	did := func(op string, err error) {
		if err != nil {
			rep.Errors++
			return
		}
		rep.Ops[op]++
	}
	in := func(name string) string { return filepath.Join(cfg.Mount, name) }
	switch cfg.Mode {
	case "swapdir":
		for !stopped() {
			for _, d := range cfg.Dirs {
				if err := os.Rename(in(d), in(d)+".away"); err != nil {
					did("swap", err) // d gone, say: no busy loop meanwhile
					time.Sleep(time.Millisecond)
					continue
				}
				did("swap", os.Symlink(cfg.Targets[0], in(d)))
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
				_ = os.Remove(in(d))
				did("restore", os.Rename(in(d)+".away", in(d)))
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
			}
		}
	case "exchange":
		for !stopped() {
			for _, p := range cfg.Pairs {
				did("exchange", unix.Renameat2(unix.AT_FDCWD, in(p[0]), unix.AT_FDCWD, in(p[1]), unix.RENAME_EXCHANGE))
			}
		}
	case "chaos":
		chaos(cfg, rng, stopped, did)
	default:
		fmt.Fprintln(os.Stderr, "hostile helper: unknown mode", cfg.Mode)
		return 2
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	return 0
}

// chaos does, at random, under every directory of the mount: renames of
// entries to other names and directories and back, RENAME_EXCHANGEs of
// two entries, a directory or file replaced by a symlink to a host target
// for a moment, a symlink to a host target exchanged with a file or a
// directory, and new symlinks to host targets left behind.
//
// The program itself never follows a symlink: every path is resolved
// beneath the mount with openat2(RESOLVE_NO_SYMLINKS), so whatever changes
// on the host was changed by the daemon, not by this (root) program going
// through a symlink it swapped in.
func chaos(cfg hostileConfig, rng *mrand.Rand, stopped func() bool, did func(string, error)) {
	root, err := unix.Open(cfg.Mount, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile helper:", err)
		os.Exit(2)
	}
	defer unix.Close(root)
	// at resolves the parent of rel (a path relative to the mount) beneath
	// the mount, through no symlink, and calls fn with its descriptor and
	// rel's last name.
	at := func(rel string, fn func(dirfd int, name string) error) error {
		dir, name := filepath.Split(rel)
		if dir = strings.TrimSuffix(dir, "/"); dir == "" {
			dir = "."
		}
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return fn(fd, name)
	}
	rename := func(from, to string, flags uint) error {
		return at(from, func(fd1 int, n1 string) error {
			return at(to, func(fd2 int, n2 string) error { return unix.Renameat2(fd1, n1, fd2, n2, flags) })
		})
	}
	symlink := func(target, rel string) error {
		return at(rel, func(fd int, n string) error { return unix.Symlinkat(target, fd, n) })
	}
	remove := func(rel string) error { // a file or symlink
		return at(rel, func(fd int, n string) error { return unix.Unlinkat(fd, n, 0) })
	}
	lstat := func(rel string) (unix.Stat_t, error) {
		var st unix.Stat_t
		err := at(rel, func(fd int, n string) error { return unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) })
		return st, err
	}
	create := func(rel, content string) error {
		return at(rel, func(fd int, n string) error {
			f, err := unix.Openat(fd, n, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			_, err = unix.Write(f, []byte(content))
			unix.Close(f)
			return err
		})
	}

	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var dirs, entries []string
	rescan := func() {
		// A directory swapped for a symlink meanwhile may be listed
		// through it: its names resolve beneath the mount or not at all.
		dirs, entries = []string{""}, nil
		_ = filepath.WalkDir(cfg.Mount, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == cfg.Mount {
				return nil
			}
			if len(entries) > 400 {
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(cfg.Mount, p)
			entries = append(entries, rel)
			if d.IsDir() {
				dirs = append(dirs, rel)
			}
			return nil
		})
	}
	seq := 0
	tmpName := func(dir string) string {
		seq++
		return filepath.Join(dir, fmt.Sprintf(".hostile-%d-%d", os.Getpid(), seq))
	}
	for n := 0; !stopped(); n++ {
		if n%50 == 0 || len(entries) == 0 {
			rescan()
			if len(entries) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
		}
		target := pick(cfg.Targets)
		ent := pick(entries)
		// Swapping a symlink in for a directory (case 2) is drawn twice as
		// often as the rest: it is what a tool's change mirrored into the
		// mount meets.
		switch rng.IntN(7) {
		case 0: // rename away and back, maybe to another directory
			to := tmpName(pick(dirs))
			if err := rename(ent, to, 0); err != nil {
				did("rename", err)
				continue
			}
			did("rename", nil)
			time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
			did("rename back", rename(to, ent, 0))
		case 1: // exchange two entries
			did("exchange", rename(ent, pick(entries), unix.RENAME_EXCHANGE))
		case 2, 6: // a symlink to the host swapped in for a moment, mostly for a directory
			if len(dirs) > 1 && rng.IntN(3) > 0 {
				ent = pick(dirs[1:])
			}
			away := tmpName(filepath.Dir(ent))
			if err := rename(ent, away, 0); err != nil {
				did("symlink swap", err)
				continue
			}
			did("symlink swap", symlink(target, ent))
			time.Sleep(time.Duration(1000+rng.IntN(9000)) * time.Microsecond)
			_ = remove(ent)
			did("restore", rename(away, ent, 0))
		case 3: // a symlink to the host exchanged with an entry, many times
			ln := tmpName(filepath.Dir(ent))
			if err := symlink(target, ln); err != nil {
				did("symlink exchange", err)
				continue
			}
			for range 10 + rng.IntN(100) {
				did("symlink exchange", rename(ent, ln, unix.RENAME_EXCHANGE))
			}
			// The symlink is at ln or, after an odd number of exchanges,
			// at ent's name: put it back at ln and remove it.
			if st, err := lstat(ln); err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
				_ = rename(ent, ln, unix.RENAME_EXCHANGE)
			}
			_ = remove(ln)
		case 4: // a symlink to the host renamed over a file (atomically)
			st, err := lstat(ent)
			if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			ln := tmpName(filepath.Dir(ent))
			if err := symlink(target, ln); err != nil {
				did("symlink over", err)
				continue
			}
			did("symlink over", rename(ln, ent, 0))
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			_ = remove(ent)
			_ = create(ent, fmt.Sprintf("restored by the hostile program %d\n", n))
		case 5: // a symlink to the host left behind
			did("symlink", symlink(target, filepath.Join(pick(dirs), fmt.Sprintf("link-%d", rng.IntN(8)))))
		}
		// A quiet moment between attacks lets some ingests through whole,
		// so that tools run and the daemon mirrors their changes into a
		// mount that changes under it a moment later.
		time.Sleep(time.Duration(rng.IntN(6000)) * time.Microsecond)
	}
}

// hostileProc is a running hostile program.
type hostileProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
	errb  bytes.Buffer
	done  chan struct{}
	err   error
}

// startHostile runs the hostile program with cfg, as a separate process.
// It stops when stop is called, at cfg.Until, or when ctx ends (killed).
func startHostile(t testing.TB, ctx context.Context, cfg hostileConfig) *hostileProc {
	t.Helper()
	if cfg.Seed == 0 {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
		require.NoError(t, err)
		cfg.Seed = n.Uint64()
	}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	h := &hostileProc{done: make(chan struct{})}
	h.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	h.cmd.Env = append(os.Environ(), "VFSD_HOSTILE_HELPER="+string(raw))
	h.cmd.Dir = "/"
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.errb
	h.cmd.Cancel = func() error { return h.cmd.Process.Signal(syscall.SIGKILL) }
	h.cmd.WaitDelay = 5 * time.Second
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, h.cmd.Start())
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() { h.stop(t) })
	t.Logf("hostile program (pid %d, seed %d, mode %s) on %s", h.cmd.Process.Pid, cfg.Seed, cfg.Mode, cfg.Mount)
	return h
}

// stop asks the program to stop and waits for it (killing it after 10 s);
// it returns its report.
func (h *hostileProc) stop(t testing.TB) hostileReport {
	_ = h.stdin.Close()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Signal(syscall.SIGKILL)
		<-h.done
	}
	var rep hostileReport
	sc := bufio.NewScanner(bytes.NewReader(h.out.Bytes()))
	for sc.Scan() {
		_ = json.Unmarshal(sc.Bytes(), &rep)
	}
	if h.errb.Len() > 0 {
		t.Logf("hostile program stderr: %s", h.errb.String())
	}
	return rep
}
