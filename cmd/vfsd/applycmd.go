package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
)

func newApplyCmd(g *globalFlags) *cobra.Command {
	var dryRun bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "apply SESSION [--dry-run]",
		Short: "Write a session's changes back to the host folders it was staged from",
		Long: `Writes what changed in SESSION since its host folders were imported (or last
applied) back to them. A path the host changed meanwhile is a conflict: it is
reported and left alone, and the command exits 1. --dry-run reports what would
be written and writes nothing. Review first with vfsd snapshot diff --session
SESSION --from import.`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.Apply(cmd.Context(), args[0], dryRun)
		if err != nil {
			return err
		}
		if err := out.print(r, func(w io.Writer) {
			verb := "applied"
			if r.DryRun {
				verb = "would apply"
			}
			for _, ch := range r.Applied {
				fmt.Fprintf(w, "%s %-7s %s\n", verb, ch.Action, ch.HostPath)
			}
			for _, ch := range r.Conflicts {
				fmt.Fprintf(w, "conflict %-7s %s: %s\n", ch.Action, ch.HostPath, ch.Conflict)
			}
			for _, p := range r.Outside {
				fmt.Fprintf(w, "not applied: %s is outside every host folder\n", p)
			}
			fmt.Fprintf(w, "%d changes %s, %d conflicts\n", len(r.Applied), verb, len(r.Conflicts))
		}); err != nil {
			return err
		}
		if len(r.Conflicts) > 0 {
			return fmt.Errorf("%d changes were not applied because the host changed since the import; apply them by hand, or reset the session (vfsd session reset %s) to start from the host as it is", len(r.Conflicts), args[0])
		}
		return nil
	})
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be written, write nothing")
	return cmd
}
