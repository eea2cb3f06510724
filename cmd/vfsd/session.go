package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/internal/textdiff"
)

func newSessionCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create, list, show, reset and close (rm) the daemon's sessions",
		Example: `  vfsd session create --id review --folder ~/src/app=/
  vfsd session list
  vfsd session rm review`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("name a verb: %s", verbs(cmd))}
		},
	}
	cmd.AddCommand(newSessionCreateCmd(g), newSessionListCmd(g), newSessionShowCmd(g), newSessionResetCmd(g),
		newSessionCloseCmd(g), newSessionTTLCmd(g), newSessionToolsCmd(g),
		newSessionRewindCmd(g), newSessionRebaseCmd(g), newSessionMoveCmd(g), newSessionTakeCmd(g))
	return cmd
}

// verbs lists a command's sub-commands.
func verbs(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}

// sessionFlags are the options of a new session, shared by session create
// and snapshot fork.
type sessionFlags struct {
	id, policy, profile, ttl, contract string
	policyFile, label, keepRef         string
}

func (sf *sessionFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&sf.id, "id", "", "the session's ID (default: a fresh one)")
	f.StringVar(&sf.policy, "policy", "", "policy preset: default, weakincentives, x07 or aos")
	f.StringVar(&sf.policyFile, "policy-file", "", policyFileUsage)
	f.StringVar(&sf.profile, "profile", "", "tool profile: openai, anthropic, gemini, minimal or consolidated")
	f.StringVar(&sf.ttl, "ttl", "", `lifetime, like 90m or 24h; "never" for no expiry (default: the daemon's)`)
	f.StringVar(&sf.contract, "contract", "", "tool contract: "+strings.Join(contract.Names(), ", ")+` (default "vfsd"; a fork: its origin's)`)
	f.StringVar(&sf.label, "label", "", "a note to remember the session by (vfsd session list shows it)")
	f.StringVar(&sf.keepRef, "keep-ref", "", "with a remote: a ref of the fleet that follows the session's latest pushed snapshot (vfsd ref list)")
}

func (sf *sessionFlags) request() api.CreateSessionRequest {
	return api.CreateSessionRequest{ID: sf.id, Policy: sf.policy, Profile: sf.profile, TTL: sf.ttl, Contract: sf.contract, Label: sf.label, KeepRef: sf.keepRef}
}

func newSessionCreateCmd(g *globalFlags) *cobra.Command {
	var (
		sf                                      sessionFlags
		pf                                      progressFlag
		folders, oldMounts, include, exclude    []string
		mountsFile, base, fork                  string
		contractOptions                         string
		maxBytes                                int64
		gitignore, defaultExcludes, followLinks bool
		mounts                                  []api.Mount // read from the flags before the daemon is reached
	)
	cmd := &cobra.Command{
		Use:   "create [--folder HOST[=PATH]]... [--base SNAP | --fork SESSION] [--policy P | --policy-file F] [--ttl D] [--label TEXT]",
		Short: "Create a session: empty, staged from host folders, from a snapshot, or forked",
		Long: `Creates a session and prints its ID and its token (shown once: it reaches
this session only, over TCP). With --folder, host folders (beneath the daemon's
--allow-root directories) are staged into it: HOST lands at PATH in the session
(default: the folder's name); --include, --exclude, --max-bytes, --gitignore,
--default-excludes and --follow-symlinks apply to every --folder. --mounts-file
gives them as a JSON array of the API's mount objects instead ("-" for stdin).
(--folder was called --mount before; --mount still works and warns.)`,
		Example: `  vfsd session create --id review --folder ~/src/app=/ --default-excludes --ttl 24h
  vfsd session create --folder ~/src/api --folder ~/src/web --label "api+web refactor"
  vfsd session create --base 3f2a9c --policy x07
  vfsd session create --fork review --id review-2
  vfsd session create --json | jq -r .token`,
		Args: usageArgs(cobra.NoArgs),
	}
	sf.add(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&folders, "folder", nil, "stage host folder HOST at session path PATH (repeatable)")
	f.StringArrayVar(&oldMounts, "mount", nil, "the old name of --folder")
	deprecateFlag(cmd, "mount", "--folder")
	f.StringArrayVar(&include, "include", nil, "import only files matching this doublestar glob (repeatable)")
	f.StringArrayVar(&exclude, "exclude", nil, "skip files and folders matching this glob (repeatable)")
	f.Int64Var(&maxBytes, "max-bytes", 0, "fail the import if a folder holds more than this many bytes")
	f.BoolVar(&gitignore, "gitignore", false, "honour .gitignore files")
	f.BoolVar(&defaultExcludes, "default-excludes", false, "skip .git, node_modules, build outputs and the like")
	f.BoolVar(&followLinks, "follow-symlinks", false, "import what symlinks point to (within the allowed root)")
	f.StringVar(&mountsFile, "mounts-file", "", "the folders as a JSON array of mount objects, from a file or - for stdin")
	f.StringVar(&base, "base", "", "start from this snapshot (ID or unique prefix)")
	f.StringVar(&fork, "fork", "", "start from this session's current state")
	f.StringVar(&contractOptions, "contract-options", "", `the contract's session options: a JSON object, or @FILE ("@-" for stdin); weakincentives: {"mounts":[{"host_path":"docs/"}]}`)
	pf.add(cmd)
	// The host folders are read first: a daemon run inside the command
	// (when none is running) must allow them.
	withHostAccess(cmd, hostAccess{roots: func(cmd *cobra.Command, _ []string) ([]string, error) {
		all := append(slices.Clone(folders), oldMounts...)
		for _, m := range all {
			host, at, _ := strings.Cut(m, "=")
			abs, err := filepath.Abs(host)
			if err != nil {
				return nil, usageError{fmt.Errorf("--folder %s: %w", m, err)}
			}
			mounts = append(mounts, api.Mount{HostPath: abs, MountPath: at, Include: include, Exclude: exclude,
				MaxBytes: maxBytes, Gitignore: gitignore, DefaultExcludes: defaultExcludes, FollowSymlinks: followLinks})
		}
		if mountsFile != "" {
			if len(all) > 0 {
				return nil, usageError{fmt.Errorf("give --folder or --mounts-file, not both")}
			}
			var b []byte
			var err error
			if mountsFile == "-" {
				b, err = io.ReadAll(cmd.InOrStdin())
			} else {
				b, err = os.ReadFile(mountsFile)
			}
			if err == nil {
				err = json.Unmarshal(b, &mounts)
			}
			if err != nil {
				return nil, usageError{fmt.Errorf("--mounts-file %s: %w (want a JSON array of mounts, see docs/api.md)", mountsFile, err)}
			}
		}
		if len(mounts) == 0 && (len(include) > 0 || len(exclude) > 0 || maxBytes != 0) {
			return nil, usageError{fmt.Errorf("--include, --exclude and --max-bytes shape --folder folders; give a --folder")}
		}
		roots := make([]string, 0, len(mounts))
		for _, m := range mounts {
			roots = append(roots, m.HostPath)
		}
		return roots, nil
	}})
	return remoteCmd(g, cmd, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		req := sf.request()
		req.Base, req.Fork, req.Mounts = base, fork, mounts
		if err := setPolicy(cmd, &req, sf.policy, sf.policyFile); err != nil {
			return err
		}
		if contractOptions != "" {
			opts, err := readJSONArg(cmd, "--contract-options", contractOptions)
			if err != nil {
				return err
			}
			req.ContractOptions = opts
		}
		var resp *api.CreateSessionResponse
		var err error
		if pp := pf.printer(cmd); pp != nil && len(req.Mounts) > 0 {
			resp, err = c.CreateSessionProgress(cmd.Context(), req, pp.show)
			pp.done()
		} else {
			resp, err = c.CreateSession(cmd.Context(), req)
		}
		if err != nil {
			return err
		}
		return out.print(resp, func(w io.Writer) { printCreated(w, resp) })
	})
}

// printCreated prints a new session for people.
func printCreated(w io.Writer, r *api.CreateSessionResponse) {
	s := r.Session
	fmt.Fprintf(w, "created session %s (policy %s, profile %s, contract %s, expires %s)\n", s.ID, s.Policy, s.Profile, s.Contract, expires(&s))
	if r.Import != nil {
		im := r.Import
		fmt.Fprintf(w, "imported %d files, %d directories, %s in %.0f ms (%d unchanged files from the cache)\n",
			im.Files, im.Dirs, sizeText(im.Bytes), im.TotalMs, im.Cached)
		for _, sk := range im.Skipped {
			fmt.Fprintf(w, "  skipped %s: %s\n", textdiff.ShowText(sk.HostPath), sk.Reason)
		}
		for _, warn := range im.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
	}
	fmt.Fprintf(w, "token: %s\n(shown once; it reaches this session only)\n", r.Token)
}

func newSessionListCmd(g *globalFlags) *cobra.Command {
	var quiet bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:     "list [-q]",
		Aliases: []string{"ls"},
		Short:   "List the open sessions: created, host folders, label, size",
		Example: `  vfsd session list
  vfsd session list -q | xargs -r vfsd session rm    # close them all
  vfsd session list --json | jq -r '.sessions[] | select(.label == "nightly") | .id'`,
		Args: usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		list, err := c.Sessions(cmd.Context())
		if err != nil {
			return err
		}
		if quiet && !out.json {
			for _, s := range list {
				fmt.Fprintln(out.w, s.ID)
			}
			return nil
		}
		return out.print(api.SessionList{Sessions: list}, func(w io.Writer) { printSessions(w, list) })
	})
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print the session IDs only, one a line")
	return cmd
}

// printSessions prints the session table of vfsd session list.
func printSessions(w io.Writer, list []api.Session) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no sessions; create one with vfsd session create, or try vfsd run -- CMD")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tFILES\tSIZE\tEXPIRES\tLABEL\tHOST FOLDERS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", s.ID, s.CreatedAt.Local().Format(time.DateTime), s.Files, sizeText(s.Bytes),
			expiresShort(&s), orDash(textdiff.QuotePath(s.Label)), orDash(strings.Join(hostFolders(s.Mounts), ", ")))
	}
	tw.Flush()
}

// hostFolders lists a session's host folders as HOST or HOST=PATH,
// quoted as git quotes paths.
func hostFolders(mounts []api.Mount) []string {
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		t := textdiff.QuotePath(m.HostPath)
		if m.MountPath != "" && m.MountPath != filepath.Base(m.HostPath) {
			t += "=" + textdiff.QuotePath(m.MountPath)
		}
		out = append(out, t)
	}
	return out
}

// expiresShort is when a session expires, for tables.
func expiresShort(s *api.Session) string {
	if s.ExpiresAt == nil {
		return "never"
	}
	return untilText(time.Until(*s.ExpiresAt))
}

func newSessionShowCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session",
		Example: `  vfsd session show review
  vfsd session show review --json | jq .effective_policy`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		s, err := c.Session(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) { describeSession(w, s) })
	})
}

func newSessionResetCmd(g *globalFlags) *cobra.Command {
	var pf progressFlag
	cmd := remoteCmd(g, sessionHost(&cobra.Command{
		Use:   "reset SESSION",
		Short: "Return a session to its start (importing its host folders again, if it has any)",
		Example: `  vfsd session reset review              # drop the agent's changes, take the host folders as they are now
  vfsd session reset review --progress   # show the import's progress`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, 0), func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		var r *api.ResetResponse
		var err error
		if pp := pf.printer(cmd); pp != nil {
			r, err = c.ResetSessionProgress(cmd.Context(), args[0], pp.show)
			pp.done()
		} else {
			r, err = c.ResetSession(cmd.Context(), args[0])
		}
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			if r.Import != nil {
				fmt.Fprintf(w, "reset session %s: imported its folders again (%d files, %s; %d unchanged)\n",
					r.Session.ID, r.Import.Files, sizeText(r.Import.Bytes), r.Import.Cached)
				return
			}
			fmt.Fprintf(w, "reset session %s to its base\n", r.Session.ID)
		})
	})
	pf.add(cmd)
	return cmd
}

func newSessionCloseCmd(g *globalFlags) *cobra.Command {
	var purge bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:     "close SESSION... [--purge]",
		Aliases: []string{"rm"},
		Short:   "Close sessions and remove their state (their snapshots stay unless --purge)",
		Long: `Closes each SESSION, one at a time, stopping at the first that cannot be
closed: its mounts are unmounted and its state is removed. What was not
applied to the host is lost; its snapshots stay (a fork or restore can bring
it back) unless --purge, or unless the session's contract purges them
(weakincentives). vfsd session rm is the same verb.`,
		Example: `  vfsd session close review
  vfsd session rm review --purge                     # its snapshots go too
  vfsd session list -q | xargs -r vfsd session rm    # every session`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		closeFn := c.CloseSession // the session's contract decides (weakincentives purges)
		if cmd.Flags().Changed("purge") {
			closeFn = func(ctx context.Context, id string) error { return c.CloseSessionWith(ctx, id, purge) }
		}
		var closed []string
		for _, id := range args {
			if err := closeFn(cmd.Context(), id); err != nil {
				if len(closed) > 0 {
					return fmt.Errorf("%w (closed before it: %s)", err, strings.Join(closed, ", "))
				}
				return err
			}
			closed = append(closed, id)
		}
		if len(args) == 1 {
			return out.print(map[string]string{"closed": args[0]}, func(w io.Writer) {
				fmt.Fprintf(w, "closed session %s\n", args[0])
			})
		}
		return out.print(map[string][]string{"closed": closed}, func(w io.Writer) {
			for _, id := range closed {
				fmt.Fprintf(w, "closed session %s\n", id)
			}
		})
	})
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete the snapshots taken of it (those no other session needs); default: the session's contract decides (weakincentives: true; --purge=false keeps them)")
	return cmd
}

func newSessionTTLCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:   "ttl SESSION DURATION",
		Short: `Give a session a new lifetime from now (like 2h; "never" for no expiry)`,
		Example: `  vfsd session ttl review 2h
  vfsd session ttl review never`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		s, err := c.SetTTL(cmd.Context(), args[0], args[1])
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) { fmt.Fprintf(w, "session %s expires %s\n", s.ID, expires(s)) })
	})
}

func newSessionToolsCmd(g *globalFlags) *cobra.Command {
	var profile string
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "tools SESSION [--profile P]",
		Short: "Print a session's tool definitions in a provider's JSON, and the prompt section",
		Example: `  vfsd session tools review
  vfsd session tools review --profile openai --json | jq .tools`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		tl, err := c.Tools(cmd.Context(), args[0], profile)
		if err != nil {
			return err
		}
		return out.print(tl, func(w io.Writer) {
			var pretty bytes.Buffer
			if json.Indent(&pretty, tl.Tools, "", "  ") != nil {
				pretty.Reset()
				pretty.Write(tl.Tools)
			}
			fmt.Fprintf(w, "%s\n\n%s\n", pretty.String(), strings.TrimSpace(tl.Prompt))
		})
	})
	cmd.Flags().StringVar(&profile, "profile", "", "openai, anthropic, gemini, minimal or consolidated (default: the session's)")
	return cmd
}

// readJSONArg reads a flag's JSON value: the text itself, or @FILE (@- for
// stdin). It must be valid JSON.
func readJSONArg(cmd *cobra.Command, flag, v string) (json.RawMessage, error) {
	b := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			b, err = io.ReadAll(cmd.InOrStdin())
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, usageError{fmt.Errorf("%s %s: %w", flag, v, err)}
		}
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, usageError{fmt.Errorf("%s: not valid JSON; give a JSON object or @FILE holding one", flag)}
	}
	return json.RawMessage(b), nil
}

func newSessionRewindCmd(g *globalFlags) *cobra.Command {
	var to string
	cmd := remoteCmd(g, &cobra.Command{
		Use: "rewind SESSION --to CALL|@POSITION|SNAPSHOT|TIME",
		Example: `  vfsd session rewind review --to 4        # back to just before call 4
  vfsd session rewind review --to @120     # a position from vfsd log
  vfsd session rewind review --to 15m      # the state 15 minutes ago
  vfsd session rewind review --to 3f2a9c   # a snapshot`,
		Short: "Put a session back to an earlier state of its history (itself undoable)",
		Long: `Puts SESSION back to an earlier state: just before tool call CALL (a number,
or call:N), a journal position from 'vfsd log' (@N or seq:N), a snapshot's
state (its ID or a unique prefix), or the state at a TIME (RFC 3339, a local
"2006-01-02 15:04:05", or a duration ago: 10m). The rewind is itself a step
of the history: it prints the command that undoes it. Mounts of the session
show the rewound state at once. Cost does not grow with the workspace: the
session keeps checkpoints of its tree and replays its journal from the
nearest.

Examples:
  vfsd session rewind 3f2a --to 4          # just before call 4
  vfsd session rewind 3f2a --to @17        # a position from vfsd log
  vfsd session rewind 3f2a --to 9c1e0b     # a snapshot
  vfsd session rewind 3f2a --to 15m        # the state 15 minutes ago`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		req, err := parseRewindTarget(to, time.Now())
		if err != nil {
			return usageError{err}
		}
		r, err := c.Rewind(cmd.Context(), args[0], req)
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			if r.Restored != "" {
				fmt.Fprintf(w, "restored session %s to snapshot %s (it was not taken within the session's history)\n", r.Session.ID, r.Restored)
			} else {
				fmt.Fprintf(w, "rewound session %s to @%d (it was at @%d)\n", r.Session.ID, r.To, r.From)
			}
			fmt.Fprintf(w, "undo: vfsd session rewind %s --to @%d\n", r.Session.ID, r.From)
		})
	})
	cmd.Flags().StringVar(&to, "to", "", "where to go: CALL, @POSITION, SNAPSHOT or TIME")
	return cmd
}

// parseRewindTarget reads --to.
func parseRewindTarget(to string, now time.Time) (api.RewindRequest, error) {
	to = strings.TrimSpace(to)
	if to == "" {
		return api.RewindRequest{}, errors.New("--to is required: a call number, @POSITION from vfsd log, a snapshot, or a time")
	}
	num := func(s string) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil
	}
	if n, ok := num(strings.TrimPrefix(strings.TrimPrefix(to, "call:"), "#")); ok {
		if n == 0 {
			return api.RewindRequest{}, errors.New("--to 0: calls are numbered from 1; use @0 for the session's start")
		}
		return api.RewindRequest{Call: n}, nil
	}
	for _, prefix := range []string{"@", "seq:"} {
		if rest, ok := strings.CutPrefix(to, prefix); ok {
			n, ok := num(rest)
			if !ok {
				return api.RewindRequest{}, fmt.Errorf("--to %s: give a journal position after %s (from vfsd log)", to, prefix)
			}
			return api.RewindRequest{Seq: &n}, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, to); err == nil {
		return api.RewindRequest{Time: &t}, nil
	}
	if t, err := time.ParseInLocation(time.DateTime, to, time.Local); err == nil {
		return api.RewindRequest{Time: &t}, nil
	}
	if d, err := time.ParseDuration(to); err == nil && d > 0 {
		t := now.Add(-d)
		return api.RewindRequest{Time: &t}, nil
	}
	return api.RewindRequest{Snapshot: to}, nil
}

func newSessionRebaseCmd(g *globalFlags) *cobra.Command {
	var dryRun bool
	cmd := remoteCmd(g, &cobra.Command{
		Use: "rebase SESSION [--dry-run]",
		Example: `  vfsd session rebase review --dry-run     # what a rebase would keep, take, merge and mark
  vfsd session rebase review && vfsd apply review`,
		Short: "Bring the host's newer state into a session, keeping the session's changes",
		Long: `Imports SESSION's host folders again and replays the session's changes on
top: files only the session changed keep its version, files only the host
changed take the host's, and text files both changed are merged line by
line by git's three-way rules. Where both changed the same lines the file
gets conflict markers (<<<<<<< session ... ======= ... >>>>>>> host): edit
them in the session, then 'vfsd apply' goes through. The rebase is one
step of the session's history: 'vfsd session rewind SESSION --to @N' (N as
printed) undoes it. Exits 1 when there are conflicts.

Examples:
  vfsd session rebase 3f2a --dry-run
  vfsd session rebase 3f2a && vfsd apply 3f2a`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.Rebase(cmd.Context(), args[0], api.RebaseRequest{DryRun: dryRun})
		if err != nil {
			return err
		}
		if err := out.print(r, func(w io.Writer) { printRebase(w, args[0], r) }); err != nil {
			return err
		}
		if len(r.Conflicts) > 0 && !r.DryRun {
			return fmt.Errorf("%d paths both the session and the host changed need a hand (see each); fix them in the session, then vfsd apply %s — or undo the rebase with vfsd session rewind %s --to @%d", len(r.Conflicts), args[0], args[0], r.SeqBefore)
		}
		return nil
	})
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what the rebase would do, change nothing")
	return cmd
}

// printRebase prints a rebase report as text.
func printRebase(w io.Writer, id string, r *api.RebaseReport) {
	verb := ""
	if r.DryRun {
		verb = "would be "
	}
	for _, p := range r.Taken {
		fmt.Fprintf(w, "%staken from the host  %s\n", verb, textdiff.QuotePath(p))
	}
	for _, p := range r.Merged {
		fmt.Fprintf(w, "%smerged               %s\n", verb, textdiff.QuotePath(p))
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "conflict             %s: %s; %s\n", textdiff.QuotePath(c.Path), c.Reason, c.Resolution)
	}
	fmt.Fprintf(w, "%d session changes kept, %d host changes %staken, %d merged, %d conflicts\n", r.KeptCount, r.TakenCount, verb, r.MergedCount, len(r.Conflicts))
	if !r.DryRun && r.Seq != r.SeqBefore {
		fmt.Fprintf(w, "undo: vfsd session rewind %s --to @%d\n", id, r.SeqBefore)
	}
}

func newSessionMoveCmd(g *globalFlags) *cobra.Command {
	var to string
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "move SESSION --to DAEMON",
		Short: "Hand a session to another daemon of the fleet (sharing --remote)",
		Long: `Freezes the session (calls in flight finish, new ones are refused),
snapshots and pushes it, and rewrites its owner record in the bucket, by
compare-and-swap, to name DAEMON at the next epoch. DAEMON takes it up on the
first call that names it (a lazy fork of the pushed snapshot). The copy here is
fenced: its tools answer 'fenced', naming DAEMON. See docs/fleets.md.`,
		Example: `  vfsd daemon list                 # the fleet's daemons
  vfsd session move review --to build-2`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		if to == "" {
			return usageError{fmt.Errorf("name the receiving daemon with --to (vfsd daemon list shows them)")}
		}
		r, err := c.MoveSession(cmd.Context(), args[0], to)
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			fmt.Fprintf(w, "moved session %s to %s (epoch %d) at snapshot %s in %.0f ms; its next call there takes it up\n",
				r.Session, r.To, r.Epoch, short(r.Snapshot), r.Ms["freeze"]+r.Ms["snapshot"]+r.Ms["push"]+r.Ms["handoff"])
		})
	})
	cmd.Flags().StringVar(&to, "to", "", "the receiving daemon's fleet name")
	return cmd
}

func newSessionTakeCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:   "take SESSION",
		Short: "Take over a session of the fleet whose owner's lease ended (it crashed, or is paused or cut off)",
		Long: `Makes this daemon the owner of SESSION at the next epoch, from its head (the
latest snapshot its owner pushed), once the owner's lease has ended by this
daemon's clock (plus --max-clock-skew). The old owner, should it come back, is
fenced at its next write; what it had acknowledged stays in its pushed
snapshots and its read-only copy. A live owner is refused: move the session
from there instead (vfsd session move).`,
		Example: `  vfsd session take review`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		s, err := c.TakeSession(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) {
			epoch := uint64(0)
			if s.Owner != nil {
				epoch = s.Owner.Epoch
			}
			fmt.Fprintf(w, "took session %s (epoch %d) from snapshot %s\n", s.ID, epoch, short(s.Base))
		})
	})
}
