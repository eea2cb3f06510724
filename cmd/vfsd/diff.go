package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
)

func newDiffCmd(g *globalFlags) *cobra.Command {
	var from, to string
	var stat bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "diff SESSION [--from REF] [--to REF] [--stat] | diff FROM TO",
		Short: "Show what a session changed (what vfsd apply would write), as a unified diff",
		Long: `vfsd diff SESSION prints what SESSION changed as a unified diff: by
default from its host folders as last imported or applied to its current
state — exactly what vfsd apply would write — or, for a session not staged
from host folders, from what it started from. --from and --to pick other
states of the session: base (what it started from), import, live (its
current state) or a snapshot of it.

vfsd diff FROM TO compares two states, each a snapshot ID (or unique prefix)
or session:ID for a session's current state.

--stat lists one line per changed path; --json prints the daemon's JSON
(with each file's unified diff). It is vfsd snapshot diff with the session
as an argument.`,
		Example: `  vfsd diff review                         # what vfsd apply review would write
  vfsd diff review --stat
  vfsd diff review --from 3f2a9c           # since a snapshot
  vfsd diff 3f2a9c session:review-2        # a snapshot against another session`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && (from != "" || to != "") {
				return usageError{fmt.Errorf("--from and --to go with one SESSION; with FROM and TO as arguments leave them out (see '%s --help')", cmd.CommandPath())}
			}
			return usageArgs(cobra.RangeArgs(1, 2))(cmd, args)
		},
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		if len(args) == 2 {
			return printDiff(cmd, c, out, "", client.DiffQuery{From: args[0], To: args[1]}, stat)
		}
		if from == "" {
			s, err := c.Session(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			from = "base"
			if s.ImportSnapshot != "" {
				from = "import"
			}
		}
		return printDiff(cmd, c, out, args[0], client.DiffQuery{From: from, To: to}, stat)
	})
	cmd.Flags().StringVar(&from, "from", "", "base, import, live or a snapshot of the session (default: import when it has host folders, else base)")
	cmd.Flags().StringVar(&to, "to", "", "base, import, live or a snapshot of the session (default live)")
	cmd.Flags().BoolVar(&stat, "stat", false, "list the changed paths instead of the diff")
	return cmd
}
