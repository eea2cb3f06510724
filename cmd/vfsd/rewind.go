package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

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
