package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

func newApplyCmd(g *globalFlags) *cobra.Command {
	var req api.ApplyRequest
	cmd := remoteCmd(g, sessionHost(&cobra.Command{
		Use:   "apply SESSION [--dry-run] [--keep-setid] [--allow-conflicts]",
		Short: "Write a session's changes back to the host folders it was staged from",
		Long: `Writes what changed in SESSION since its host folders were imported (or last
applied) back to them. A path the host changed meanwhile is a conflict: it is
reported and left alone, and the command exits 1; so is a change the host
refuses (a directory that gained files, permission denied, a full disk). What
was applied becomes the new starting point, so applying again after fixing the
host writes only the rest. --dry-run reports what would be written and writes
nothing. Paths with control characters, quotes, backslashes, bytes that are
not UTF-8 or invisible Unicode characters are printed quoted ("a\nb"). Review
first with vfsd diff SESSION.

A file a rebase (vfsd session rebase) left conflict markers in
(<<<<<<< session ... >>>>>>> host) is not applied while it still holds
them: the apply is refused, naming the files, until they are edited in the
session; --allow-conflicts applies them as they are. --dry-run lists them. No running daemon is needed: vfsd runs one inside the command.

Set-user-ID and set-group-ID bits and file capabilities (security.capability)
are not written unless the host file had them and the session left its
content alone: whoever was root in the session (a vfsd run command, with no
capabilities) must not leave a root program in your folder. Each file
written without them is noted, and the next apply lists it again;
--keep-setid writes them as the session has them.`,
		Example: `  vfsd diff review                        # review what would be written
  vfsd apply review --dry-run             # list it
  vfsd apply review && vfsd session rm review`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, 0), func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.ApplyWith(cmd.Context(), args[0], req)
		if err != nil {
			return err
		}
		if err := out.print(r, func(w io.Writer) {
			verb := "applied"
			if r.DryRun {
				verb = "would apply"
			}
			// Paths are quoted as git quotes them: a name cannot forge a
			// line of the report or send escape sequences to the terminal.
			for _, ch := range r.Applied {
				fmt.Fprintf(w, "%s %-7s %s\n", verb, ch.Action, textdiff.ShowText(ch.HostPath))
				if ch.Note != "" {
					fmt.Fprintf(w, "  note: %s\n", textdiff.ShowText(ch.Note))
				}
			}
			for _, ch := range r.Conflicts {
				fmt.Fprintf(w, "conflict %-7s %s: %s\n", ch.Action, textdiff.ShowText(ch.HostPath), textdiff.ShowText(ch.Conflict))
			}
			for _, p := range r.Outside {
				fmt.Fprintf(w, "not applied: %s is outside every host folder\n", textdiff.ShowText(p))
			}
			for _, p := range r.Unresolved {
				fmt.Fprintf(w, "unresolved: %s still holds a rebase's conflict markers\n", textdiff.ShowText(p))
			}
			fmt.Fprintf(w, "%d changes %s, %d conflicts\n", len(r.Applied), verb, len(r.Conflicts))
		}); err != nil {
			return err
		}
		if len(r.Conflicts) > 0 {
			return fmt.Errorf("%d changes were not applied: the host changed since the import, or refused them (see each reason); bring the host's changes into the session with 'vfsd session rebase %s' (the session's work is kept, both sides' edits merged), then apply again — what was applied is not redone — or fix the host, or apply them by hand", len(r.Conflicts), args[0])
		}
		return nil
	})
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "report what would be written, write nothing")
	cmd.Flags().BoolVar(&req.KeepSetID, "keep-setid", false, "write set-ID bits and file capabilities as the session has them (only for files you trust)")
	cmd.Flags().BoolVar(&req.AllowConflicts, "allow-conflicts", false, "apply files that still hold a rebase's conflict markers")
	return cmd
}
