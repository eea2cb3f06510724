//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/cmd/vfsd/internal/sandbox"
	"github.com/vfsd/vfsd/internal/gitindex"
	"github.com/vfsd/vfsd/internal/textdiff"
)

// Exit statuses of vfsd run for failures of its own, as container
// runtimes use them; otherwise it exits with the command's status.
const (
	exitRunFailed = sandbox.ExitFailed // vfsd could not set up or tear down the run
)

// runResult is what vfsd run --json prints.
type runResult struct {
	Session  string           `json:"session"`
	Dir      string           `json:"dir"`
	ExitCode int              `json:"exit_code"`
	Diff     *api.Diff        `json:"diff"`
	Applied  *api.ApplyReport `json:"applied,omitempty"` // with --apply
	// Before is, with --session, the snapshot taken before the run: Diff
	// is what the run changed since, and restoring it undoes the run.
	Before string `json:"before,omitempty"`
	// Dropped says the session was closed because the command changed
	// nothing (and --keep was not given).
	Dropped bool `json:"dropped,omitempty"`
}

type runFlags struct {
	dir, oldDir, session       string
	id, policy, ttl, sandbox   string
	jsonFile, policyFile       string
	include, exclude, writable []string
	env                        []string // --env: NAME or NAME=VALUE
	gitignore, defaultExcludes bool
	noNetwork, asJSON, apply   bool
	keep                       bool
	backend                    string
	pf                         progressFlag
	policyObject               []byte // --policy-file's content
}

func newRunCmd(g *globalFlags) *cobra.Command {
	rf := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [--dir DIR | --session SESSION] [--include G]... [--exclude G]... -- CMD [ARG]...",
		Short: "Run a command on a copy-on-write session of a folder, then show what it changed",
		Long: `Stages DIR (default: the current directory) into a new daemon session, mounts
the session (the kernel overlay or FUSE, see --backend) and runs CMD in a
sandbox where the session is DIR:
CMD sees the folder at its own path and changes it freely, and the real DIR is
untouched. Afterwards vfsd prints what CMD changed as a unified diff and how to
apply it to DIR (vfsd apply SESSION) or drop it (vfsd session close SESSION);
with --apply, a run whose CMD succeeds writes its changes to DIR at once (what
DIR changed meanwhile is left alone and reported) and drops the session. A run
that changed nothing drops its session (--keep keeps it). Stderr says which
mount backend served the run, and why (--backend auto picks the overlay where
the daemon can mount it).
(--dir was called --mount before; --mount still works and warns.)

--session SESSION runs CMD again in an existing session instead — one an
earlier vfsd run left, or one an agent works in — at its host folder (the
folder it was staged from, when it has exactly one at its root; --dir names
where CMD sees the session otherwise). vfsd snapshots the session first
(label "before vfsd run"), prints what this run changed, and keeps the
session: --apply then applies all of its changes but does not close it.

The sandbox is bubblewrap when installed, else (as root) vfsd's own
namespaces; --sandbox picks one, and stderr says which ran. Both hold the
same way: the host is read-only (--rw PATH makes a host path writable),
/tmp, /dev and /proc are private (TMPDIR points into the private /tmp), the
command has no capabilities even as root, runs in a new session (it cannot
push keystrokes into your terminal), and cannot reach the daemon: its
socket, data directory and token file are hidden, as are the host's other
Unix sockets and sessions. --no-network cuts the network.

CMD's environment is an allow-list, not a copy of yours: PATH, HOME, USER,
LOGNAME, SHELL, TERM, COLORTERM, NO_COLOR, COLUMNS, LINES, LANG, LANGUAGE,
LC_* and TZ, plus VFSD_SESSION (the session) and TMPDIR (inside the private
/tmp, or yours when it lies in a --rw path). Credentials — AWS_*, tokens,
API keys, proxies — stay out; --env NAME passes one variable of yours,
--env NAME=VALUE sets one (no VFSD_* variable can be passed).

The session is mounted nosuid,nodev in a directory only vfsd's user can
enter: a set-user-ID file or device node CMD makes there is kept in the
session as data, but honoured by no mount, and --apply (as vfsd apply)
writes no set-ID bit or file capability the host file did not have.

What CMD leaves running ends with it, and stopping vfsd (SIGINT, SIGTERM)
stops CMD — SIGKILL ten seconds later if need be — and still takes the
mount down and prints the diff.

With --json, stdout carries only the report (session, exit code, diff) as
JSON, and CMD's own stdout goes to stderr; --json-file FILE also writes the
report to FILE and leaves the streams as they are. (In its new session CMD
has no controlling terminal: an interactive shell runs without job control.)

The daemon must run on this machine with DIR beneath one of its --allow-root
directories; when none is running (and neither --socket nor --addr names one),
vfsd runs one inside this command on the default data directory, where the
session stays for a later vfsd serve.

Exit status: CMD's own; 128+N when a signal N ended it; 127 when it was not
found and 126 when it could not be run; 125 when vfsd or the sandbox failed
around it (stderr says why; a session staged for a command that never ran
is dropped).`,
		Example: `  vfsd run -- make test                                  # on the current directory
  vfsd run --dir ~/src/app --exclude '**/*.env' -- sh -c 'go generate ./... && go test ./...'
  vfsd run --rw ~/.cache --no-network -- npm test
  vfsd run --env GOFLAGS --env CI=1 -- go test ./...      # pass GOFLAGS on, set CI
  vfsd run --apply -- gofmt -w .                         # keep the changes when it succeeds
  vfsd run --session s-4201fd72e76a241e -- go test ./... # again, in the session it left
  vfsd run --json -- ./agent.sh | jq .diff.modified`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return usageError{errors.New("put the command after --: vfsd run [flags] -- CMD [ARG]...")}
			}
			if rf.dir == "" {
				rf.dir = rf.oldDir
			}
			if rf.session != "" {
				if err := sessionRunFlags(cmd); err != nil {
					return err
				}
				if rf.dir == "" {
					rf.dir = "." // a placeholder: the session's own folder replaces it below
				}
			}
			dir, err := runDir(rf.dir)
			if err != nil {
				return usageError{err}
			} // What can fail without a daemon fails before anything is staged.
			spec := sandbox.Spec{WorkDir: dir, NoNetwork: rf.noNetwork, Argv: args}
			if spec.Kind, spec.Bwrap, err = sandbox.Resolve(rf.sandbox); err != nil {
				var ke *sandbox.UnknownKindError
				if errors.As(err, &ke) {
					return usageError{err}
				}
				return exitStatus{exitRunFailed, err}
			}
			spec.UserNS = spec.Kind == sandbox.Bwrap || sandbox.UserNamespaces()
			if spec.Writable, err = sandbox.ResolveWritable(rf.writable); err != nil {
				return exitStatus{exitRunFailed, err}
			}
			if err := sandbox.ParseEnvFlags(rf.env); err != nil {
				return usageError{err}
			}
			if err := sandbox.LookCommand(args[0]); err != nil {
				return sandboxExit(err)
			}
			var polReq api.CreateSessionRequest
			if err := setPolicy(cmd, &polReq, rf.policy, rf.policyFile); err != nil {
				return err
			}
			rf.policyObject = polReq.PolicyObject
			roots := []string{dir}
			if rf.session != "" {
				roots = nil // the session's own folders, once it is known
			}
			c, embedded, err := reachDaemon(cmd.Context(), g, roots, cmd.ErrOrStderr())
			if err != nil {
				return exitStatus{exitRunFailed, err}
			}
			if rf.session != "" {
				if c, embedded, spec.WorkDir, err = existingSession(cmd, c, embedded, rf.session, dir, dirGiven(cmd)); err != nil {
					return err
				}
			}
			defer c.Close()
			if embedded != nil {
				defer func() {
					if err := embedded.stop(); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "vfsd: stop the daemon run for this command: %v\n", err)
					}
				}()
			}
			return runInSession(cmd, c, g, rf, spec, embedded)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rf.dir, "dir", "", "the folder to run on (default: the current directory); with --session: where CMD sees the session")
	f.StringVar(&rf.oldDir, "mount", "", "the old name of --dir")
	deprecateFlag(cmd, "mount", "--dir")
	f.StringVar(&rf.session, "session", "", "run in this existing session instead of staging the folder anew")
	f.StringArrayVar(&rf.include, "include", nil, "stage only files matching this doublestar glob (repeatable)")
	f.StringArrayVar(&rf.exclude, "exclude", nil, "leave out files and folders matching this glob (repeatable)")
	f.BoolVar(&rf.gitignore, "gitignore", false, "honour .gitignore files")
	f.BoolVar(&rf.defaultExcludes, "default-excludes", false, "leave out .git, node_modules, build outputs and the like")
	f.StringVar(&rf.id, "id", "", "the session's ID (default: the daemon picks one)")
	f.StringVar(&rf.policy, "policy", "", "the session's policy preset (default, weakincentives, x07, aos)")
	f.StringVar(&rf.policyFile, "policy-file", "", policyFileUsage)
	f.StringVar(&rf.ttl, "ttl", "24h", `how long the session is kept for vfsd apply ("never": until closed)`)
	f.StringVar(&rf.sandbox, "sandbox", sandbox.Auto, "auto, bwrap or namespace")
	f.StringArrayVar(&rf.writable, "rw", nil, "an existing host path the command may write (repeatable)")
	f.BoolVar(&rf.noNetwork, "no-network", false, "run without network")
	f.StringArrayVar(&rf.env, "env", nil, "pass NAME from this environment, or set NAME=VALUE, in the command's (repeatable; no VFSD_*)")
	f.StringVar(&rf.backend, "backend", api.BackendAuto, "how the session is mounted: auto (the kernel overlay where the daemon can mount it, FUSE otherwise), overlay or fuse")
	f.BoolVar(&rf.asJSON, "json", false, "print only the report (session, exit code, diff) as JSON on stdout; CMD's stdout goes to stderr")
	f.StringVar(&rf.jsonFile, "json-file", "", "also write the report as JSON to this file")
	f.BoolVar(&rf.apply, "apply", false, "when CMD succeeds, write its changes to the folder and drop the session")
	f.BoolVar(&rf.keep, "keep", false, "keep the session even when CMD changed nothing (by default such a session is dropped)")
	rf.pf.add(cmd)
	return cmd
}

// runInSession stages the folder, runs the spec's command on its mounted
// session and reports the changes. Its error is an exitStatus carrying the
// status.
func runInSession(cmd *cobra.Command, c *client.Client, g *globalFlags, rf *runFlags, spec sandbox.Spec, embedded *embeddedDaemon) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	dir, argv := spec.WorkDir, spec.Argv
	// The daemon tells its admin which host paths are its own.
	health, err := c.Health(ctx)
	if err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("ask the daemon for its paths: %w", err)}
	}
	if health.Private == nil {
		fmt.Fprintln(stderr, "vfsd: warning: the daemon does not say where its files are (an older vfsd, or not the admin token); hiding the default ones only")
	}
	var id, before string // before: with --session, the snapshot taken before the run
	if rf.session == "" {
		req := api.CreateSessionRequest{ID: rf.id, Policy: rf.policy, TTL: rf.ttl, Mounts: []api.Mount{{
			HostPath: dir, MountPath: "/", Include: rf.include, Exclude: rf.exclude,
			Gitignore: rf.gitignore, DefaultExcludes: rf.defaultExcludes}}}
		if len(rf.policyObject) > 0 {
			req.Policy, req.PolicyObject = "", rf.policyObject
		}
		var created *api.CreateSessionResponse
		if pp := rf.pf.printer(cmd); pp != nil {
			created, err = c.CreateSessionProgress(ctx, req, pp.show)
			pp.done()
		} else {
			created, err = c.CreateSession(ctx, req)
		}
		if err != nil {
			return exitStatus{exitRunFailed, fmt.Errorf("stage %s: %w", dir, err)}
		}
		id = created.Session.ID
		fmt.Fprintf(stderr, "vfsd: session %s: %d files of %s; running %s\n", id, importedFiles(created), dir, strings.Join(argv, " "))
	} else {
		id = rf.session
		snap, err := c.CreateSnapshot(ctx, id, "before vfsd run")
		if err != nil {
			return exitStatus{exitRunFailed, fmt.Errorf("snapshot session %s before the run: %w", id, err)}
		}
		before = snap.ID
		fmt.Fprintf(stderr, "vfsd: session %s (%d files, snapshot %s before this run) at %s; running %s\n", id, snap.Files, short(before), dir, strings.Join(argv, " "))
	}

	// Whatever happens to the command or to vfsd's context (an interrupt
	// reaches the command too), the mount is taken down and the diff shown.
	after := context.WithoutCancel(ctx)
	spec.Env = sandbox.Env(os.Environ(), rf.env, id, spec.Writable)
	cmdOut := cmd.OutOrStdout()
	if rf.asJSON {
		cmdOut = stderr // stdout is the report's alone
	}
	status, ran, runErr := runMounted(ctx, c, id, rf.backend, spec, daemonMasks(health, g, embedded), cmd.InOrStdin(), cmdOut, stderr)
	if runErr != nil {
		if !ran && before != "" {
			// The command never ran: the snapshot taken for it is of no use.
			if _, err := c.DeleteSnapshot(after, before); err != nil {
				return exitStatus{status, fmt.Errorf("%w; the command did not run, and deleting snapshot %s taken for it failed: %v", runErr, before, err)}
			}
			return exitStatus{status, fmt.Errorf("%w; the command did not run, and session %s is as it was", runErr, id)}
		}
		if !ran {
			// The command never ran: the session is of no use.
			if err := c.CloseSession(after, id); err != nil {
				return exitStatus{status, fmt.Errorf("%w; dropping session %s failed too: %v", runErr, id, err)}
			}
			return exitStatus{status, fmt.Errorf("%w; the command did not run, and session %s is dropped", runErr, id)}
		}
		return exitStatus{status, fmt.Errorf("%w; the session is kept: vfsd session close %s drops it", runErr, id)}
	}
	q := client.DiffQuery{From: "import", To: "live", Text: rf.asJSON}
	if before != "" {
		q.From = before // what this run changed
	}
	diff, err := c.SessionDiff(after, id, q)
	var unified string
	if err == nil && !rf.asJSON && len(diff.Entries) > 0 {
		unified, err = c.SessionDiffText(after, id, q)
	}
	if err != nil {
		return exitStatus{exitRunFailed, fmt.Errorf("diff session %s: %w; see it with vfsd snapshot diff --session %s --from import", id, err, id)}
	}
	res := runResult{Session: id, Dir: dir, ExitCode: status, Diff: diff, Before: before}
	var applyErr error
	switch {
	case before == "" && len(diff.Entries) == 0 && !rf.keep:
		// Nothing to apply or review: a session kept for 24 h would only
		// be in the way.
		if err := c.CloseSession(after, id); err != nil {
			return exitStatus{exitRunFailed, fmt.Errorf("the command changed nothing, but dropping session %s failed: %w", id, err)}
		}
		res.Dropped = true
	case rf.apply && status == 0:
		res.Applied, applyErr = applyRun(after, c, id, dir, before == "")
	}
	if rf.jsonFile != "" {
		if err := writeJSONFile(rf.jsonFile, res); err != nil {
			return exitStatus{exitRunFailed, err}
		}
	}
	if rf.asJSON {
		if err := (&output{w: cmd.OutOrStdout(), json: true}).print(res, nil); err != nil {
			return exitStatus{exitRunFailed, err}
		}
	} else {
		io.WriteString(cmd.OutOrStdout(), unified)
		printRunReport(stderr, res, embedded)
	}
	switch {
	case applyErr != nil:
		return exitStatus{exitRunFailed, applyErr}
	case status != 0:
		return exitStatus{code: status}
	}
	return nil
}

// writeJSONFile writes the report of vfsd run --json-file.
func writeJSONFile(path string, res runResult) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--json-file: %w", err)
	}
	if err := (&output{w: f, json: true}).print(res, nil); err != nil {
		f.Close()
		return fmt.Errorf("--json-file: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--json-file: write %s: %w", path, err)
	}
	return nil
}

// applyRun writes session id's changes to dir and, when all of them
// applied and drop is set (a session the run staged), closes the session.
func applyRun(ctx context.Context, c *client.Client, id, dir string, drop bool) (*api.ApplyReport, error) {
	r, err := c.Apply(ctx, id, false)
	if err != nil {
		return nil, fmt.Errorf("apply session %s to %s: %w; the session is kept", id, dir, err)
	}
	if len(r.Conflicts) > 0 {
		return r, fmt.Errorf("%d changes were not applied to %s (each with its reason above); the session %s is kept: fix the host, then vfsd apply %s", len(r.Conflicts), dir, id, id)
	}
	if !drop {
		return r, nil
	}
	if err := c.CloseSession(ctx, id); err != nil {
		return r, fmt.Errorf("applied, but closing session %s failed: %w", id, err)
	}
	return r, nil
}

// runMounted mounts session id at a fresh directory (with the mount
// backend asked for), runs the sandboxed command on it and unmounts it. It
// returns the command's exit status, or an error with the status to exit
// with when the run failed; ran says whether the command started at all.
func runMounted(ctx context.Context, c *client.Client, id, backend string, spec sandbox.Spec, daemonPaths []string, stdin io.Reader, stdout, stderr io.Writer) (status int, ran bool, err error) {
	mp, err := runMountPoint()
	if err != nil {
		return exitRunFailed, false, err
	}
	defer os.Remove(filepath.Dir(mp))
	defer os.Remove(mp)
	fm, err := c.Mount(ctx, id, api.MountRequest{Dir: mp, Backend: backend})
	if err != nil {
		return exitRunFailed, false, fmt.Errorf("mount session %s at %s: %w", id, mp, err)
	}
	fmt.Fprintf(stderr, "vfsd: mounted with %s\n", backendText(fm))
	defer func() {
		if err := c.Unmount(context.WithoutCancel(ctx), id, mp); err != nil {
			fmt.Fprintf(stderr, "vfsd: unmount %s: %v; run vfsd unmount %s\n", mp, err, mp)
		}
	}()
	spec.Mountpoint = mp
	sessionMounts, fuse := sandbox.FuseMounts(mp)
	if err := spec.SetMasks(daemonPaths, sessionMounts, sandbox.HostSockets(), fuse); err != nil {
		return exitRunFailed, false, err
	}
	proc, err := spec.Command(ctx, stdin, stdout, stderr)
	if err != nil {
		return exitRunFailed, false, err
	}
	defer proc.Close()
	fmt.Fprintf(stderr, "vfsd: %s\n", spec.Describe())
	if err := proc.Start(); err != nil {
		return exitRunFailed, false, fmt.Errorf("start the %s sandbox: %w", spec.Kind, err)
	}
	status, ran, err = proc.Wait(ctx)
	if ran {
		keepGitIndex(spec.WorkDir, mp, stderr)
	}
	if errors.Is(err, sandbox.ErrInterrupted) {
		fmt.Fprintln(stderr, "vfsd: interrupted; the command was stopped")
		return status, true, nil
	}
	return status, ran, err
}

// keepGitIndex puts back the folder's git index in the session mounted at
// mp when the command changed only git's stat cache in it (git status
// rewrites .git/index to refresh it): that is no work to review or apply.
// A real change — git add, git rm, a merge — stays.
func keepGitIndex(hostDir, mp string, stderr io.Writer) {
	const rel = ".git/index"
	host, err := os.ReadFile(filepath.Join(hostDir, rel))
	if err != nil {
		return
	}
	inSession := filepath.Join(mp, rel)
	now, err := os.ReadFile(inSession)
	if err != nil || bytes.Equal(host, now) {
		return
	}
	if same, err := gitindex.SameEntries(host, now); err != nil || !same {
		return
	}
	if err := os.WriteFile(inSession, host, 0o644); err != nil {
		fmt.Fprintf(stderr, "vfsd: %s: only git's stat cache changed, but putting it back failed: %v\n", rel, err)
		return
	}
	fmt.Fprintf(stderr, "vfsd: %s: only git's stat cache changed (git status refreshes it); left as it was\n", rel)
}

// daemonMasks are the daemon's own paths the command must not reach: what
// the daemon reports to its admin, else (an older daemon) the defaults,
// and the socket and data directory this vfsd used.
func daemonMasks(h *api.Health, g *globalFlags, embedded *embeddedDaemon) []string {
	var ps []string
	if h != nil && h.Private != nil {
		ps = append(ps, h.Private.DataDir, h.Private.Socket, h.Private.TokenFile)
		ps = append(ps, h.Private.Other...)
	}
	if embedded != nil {
		ps = append(ps, embedded.dataDir, embedded.sockDir)
	}
	if value(g.addr, envAddr) == "" {
		ps = append(ps, g.socketPath())
	}
	ps = append(ps, defaultDataDir())
	return ps
}

// sandboxExit turns the sandbox's *sandbox.ExitError into the exitStatus
// vfsd ends with; other errors it returns as they are.
func sandboxExit(err error) error {
	var ee *sandbox.ExitError
	if errors.As(err, &ee) {
		return exitStatus{ee.Code, ee.Err}
	}
	return err
}

// newNamespaceChildCmd is the namespace sandbox's hidden verb: the
// sandbox runs vfsd again with it to set itself up and run the command.
func newNamespaceChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    sandbox.ChildVerb + " SPEC -- CMD...",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sandboxExit(sandbox.RunChild(args[0], args[1:]))
		},
	}
}

// runMountPoint makes the directory vfsd run mounts the session at:
// mnt in a new directory of its own, mode 0700. Host users other than
// vfsd's cannot reach the mount through it. The mount point itself being
// 0700 would not do: a path walk that reaches it crosses into the mount
// and checks the mount's root instead (the session's root, 0755 as a
// rule), so the directory to traverse must be the one above. (The mount
// is also nosuid,nodev, and the session's files are the command's.) Only
// empty directories are removed afterwards, never anything beneath a
// mount left behind.
func runMountPoint() (string, error) {
	parent, err := os.MkdirTemp("", "vfsd-run-")
	if err == nil {
		err = os.Chmod(parent, 0o700)
	}
	if err != nil {
		return "", fmt.Errorf("create a mount point: %w", err)
	}
	mp := filepath.Join(parent, "mnt")
	if err := os.Mkdir(mp, 0o700); err != nil {
		os.Remove(parent)
		return "", fmt.Errorf("create a mount point: %w", err)
	}
	return mp, nil
}

// runDir is the folder vfsd run stages: dir, else the working directory,
// absolute and with symlinks resolved (the path the daemon checks against
// its allowed roots).
func runDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("--dir %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--dir %s: not a directory", dir)
	}
	return abs, nil
}

// sessionRunFlags refuses, with --session, the flags that shape a new
// session.
func sessionRunFlags(cmd *cobra.Command) error {
	for _, name := range []string{"include", "exclude", "gitignore", "default-excludes", "id", "policy", "policy-file", "ttl"} {
		if cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s shapes a new session; --session runs in one that exists (see '%s --help')", name, cmd.CommandPath())}
		}
	}
	return nil
}

// dirGiven reports whether the command line named the folder (--dir, or
// its old name --mount).
func dirGiven(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("dir") || cmd.Flags().Changed("mount")
}

// existingSession prepares vfsd run --session: it returns the folder
// where the command sees the session (dir when the folder was named,
// else the session's own host folder), and, when the daemon runs inside
// this command, one that allows the session's host folders for --apply.
func existingSession(cmd *cobra.Command, c *client.Client, e *embeddedDaemon, id, dir string, named bool) (*client.Client, *embeddedDaemon, string, error) {
	fail := func(err error) (*client.Client, *embeddedDaemon, string, error) {
		c.Close()
		if e != nil {
			stopEmbedded(cmd, e)
		}
		return nil, nil, "", err
	}
	s, err := c.Session(cmd.Context(), id)
	if err != nil {
		return fail(exitStatus{exitRunFailed, err})
	}
	if !named {
		if len(s.Mounts) != 1 || (s.Mounts[0].MountPath != "/" && s.Mounts[0].MountPath != "") {
			return fail(usageError{fmt.Errorf("session %s was not staged from one folder at its root (it has %d host folders): name where the command sees it with --dir DIR", id, len(s.Mounts))})
		}
		if s.Mounts[0].MountPath == "" {
			return fail(usageError{fmt.Errorf("session %s holds its host folder %s under a subfolder: name where the command sees the session with --dir DIR", id, s.Mounts[0].HostPath)})
		}
		if dir, err = runDir(s.Mounts[0].HostPath); err != nil {
			return fail(exitStatus{exitRunFailed, fmt.Errorf("session %s's host folder: %w", id, err)})
		}
	}
	if e == nil || len(s.Mounts) == 0 {
		return c, e, dir, nil
	}
	// A daemon run inside this command allows the session's folders.
	c.Close()
	stopEmbedded(cmd, e)
	var roots []string
	for _, m := range s.Mounts {
		roots = append(roots, m.HostPath)
	}
	if e, err = startEmbeddedDaemon(cmd.Context(), roots, cmd.ErrOrStderr()); err != nil {
		return nil, nil, "", exitStatus{exitRunFailed, fmt.Errorf("no daemon is running, and starting one in this process failed: %w", err)}
	}
	if c, err = client.New(client.Options{Socket: e.socket}); err != nil {
		stopEmbedded(cmd, e)
		return nil, nil, "", exitStatus{exitRunFailed, err}
	}
	return c, e, dir, nil
}

func importedFiles(r *api.CreateSessionResponse) int64 {
	if r.Import == nil {
		return 0
	}
	return r.Import.Files
}

// printRunReport prints on stderr what the command changed and what to do
// next (the diff itself goes to stdout).
func printRunReport(stderr io.Writer, res runResult, embedded *embeddedDaemon) {
	id, dir, d := res.Session, res.Dir, res.Diff
	fmt.Fprintf(stderr, "vfsd: the command exited with status %d\n", res.ExitCode)
	if len(d.Entries) == 0 {
		switch {
		case res.Dropped:
			fmt.Fprintf(stderr, "vfsd: no changes to %s; session %s dropped (vfsd run --keep keeps such a session)\n", dir, id)
		case res.Applied == nil && res.Before == "":
			fmt.Fprintf(stderr, "vfsd: no changes to %s; drop the session with: vfsd session close %s\n", dir, id)
		}
		if res.Before != "" {
			fmt.Fprintf(stderr, "vfsd: this run changed nothing in session %s\n", id)
		}
		return
	}
	fmt.Fprintf(stderr, "vfsd: session %s changed %s: %d added, %d modified, %d deleted\n", id, dir, d.Added, d.Modified, d.Deleted)
	if res.Before != "" {
		fmt.Fprintf(stderr, "  undo this run:  vfsd snapshot restore %s %s\n", id, short(res.Before))
	}
	if a := res.Applied; a != nil {
		for _, ch := range a.Applied {
			if ch.Note != "" {
				fmt.Fprintf(stderr, "  note: %s: %s\n", textdiff.QuotePath(ch.HostPath), textdiff.QuotePath(ch.Note))
			}
		}
		for _, ch := range a.Conflicts {
			fmt.Fprintf(stderr, "  not applied: %s: %s\n", textdiff.QuotePath(ch.HostPath), textdiff.QuotePath(ch.Conflict))
		}
		fmt.Fprintf(stderr, "vfsd: applied %d changes to %s\n", len(a.Applied), dir)
		if res.Before != "" {
			fmt.Fprintf(stderr, "  the session is kept; drop it with: vfsd session close %s\n", id)
		}
		return
	}
	if embedded != nil {
		fmt.Fprintf(stderr, "  no daemon was running: the session is kept in %s, for the verbs below\n", embedded.dataDir)
		fmt.Fprintf(stderr, "  (each runs one inside itself) or a daemon (%s)\n", serveHint(embedded.dataDir, []string{dir}))
	}
	fmt.Fprintf(stderr, "  apply to %s:  vfsd apply %s   (preview: vfsd diff %s)\n", dir, id, id)
	fmt.Fprintf(stderr, "  drop:  vfsd session close %s\n", id)
}
