package main

import (
	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/cmd/vfsd/internal/demo"
)

func newDemoCmd() *cobra.Command {
	var opts demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A tour of vfsd on a temporary directory: stage, tools, snapshot, fork, diff, restore, mount, log, rewind, rebase",
		Example: `  vfsd demo
  vfsd demo --dir /tmp/tour --no-mount   # keep what it made, skip FUSE`,
		Long: `Runs in-process, with no daemon and no configuration: stages a sample
host folder into a session with include/exclude globs, runs every agent tool,
snapshots, forks and edits the fork, diffs it, restores the original, and mounts
the fork through FUSE when this machine allows (root or fusermount3, and
/dev/fuse). Then it runs a daemon inside the command on a private socket (its
data directory inside the demo's directory, not the default one), creates a
session of the sample folder, makes three tool calls, prints the log, rewinds
to before call 2 and undoes the rewind, changes the host folder and the
session on different lines of one file, and rebases, merging both. It prints
what happened at each step. Everything is removed afterwards unless --dir is
given.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "work here and keep the result (default: a temporary directory, removed)")
	cmd.Flags().BoolVar(&opts.NoMount, "no-mount", false, "skip the FUSE step")
	return cmd
}
