package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

func newRefCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ref",
		Short: "Set, list, show and remove the fleet's refs: named pointers to snapshots",
		Long: `A ref is a name for a snapshot, shared by every daemon on the same --remote
bucket, moved by compare-and-swap (S3's conditional writes). Fork one with
vfsd snapshot fork --from-ref NAME. See docs/fleets.md.`,
		Example: `  vfsd ref set team/main 3f2a9c
  vfsd ref list
  vfsd snapshot fork --from-ref team/main --id try-1
  vfsd ref rm team/main`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("name a verb: %s", verbs(cmd))}
		},
	}
	cmd.AddCommand(newRefSetCmd(g), newRefListCmd(g), newRefShowCmd(g), newRefRmCmd(g))
	return cmd
}

func newRefSetCmd(g *globalFlags) *cobra.Command {
	var expect string
	var expectSet bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "set NAME SNAPSHOT [--expect SNAPSHOT_ID]",
		Short: "Point a ref at a snapshot (pushed first if only local)",
		Example: `  vfsd ref set team/main 3f2a9c
  vfsd ref set team/main 7b1e00 --expect 3f2a9c...   # only if it still points there
  vfsd ref set new-ref 3f2a9c --expect ""              # only if it does not exist yet`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.SetRef(cmd.Context(), args[0], api.RefRequest{Snapshot: args[1], Expect: expect, ExpectSet: expectSet})
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			fmt.Fprintf(w, "ref %s -> %s (move %d)\n", r.Name, short(r.Snapshot), r.Seq)
		})
	})
	cmd.Flags().StringVar(&expect, "expect", "", `move only while the ref points at this snapshot ID ("" : only if it does not exist)`)
	cmd.PreRun = func(cmd *cobra.Command, _ []string) { expectSet = cmd.Flags().Changed("expect") }
	return cmd
}

func newRefListCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the fleet's refs",
		Example: `  vfsd ref list
  vfsd ref list --json | jq -r '.refs[].name'`,
		Args: usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		l, err := c.Refs(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(l, func(w io.Writer) {
			if len(l.Refs) == 0 {
				fmt.Fprintln(w, "no refs; set one with vfsd ref set NAME SNAPSHOT")
				return
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSNAPSHOT\tMOVES\tUPDATED\tBY")
			for _, r := range l.Refs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Name, short(r.Snapshot), r.Seq, r.Updated.Local().Format(time.DateTime), r.By)
			}
			tw.Flush()
			if l.More {
				fmt.Fprintln(w, "(more refs than listed)")
			}
		})
	})
}

func newRefShowCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a ref and its previous snapshots",
		Example: `  vfsd ref show team/main`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.Ref(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			fmt.Fprintf(w, "ref %s -> %s\nmoved %d times, last %s by %s\n", r.Name, r.Snapshot, r.Seq, r.Updated.Local().Format(time.DateTime), r.By)
			for _, h := range r.History {
				fmt.Fprintf(w, "  before: %s\n", h)
			}
		})
	})
}

func newRefRmCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"delete"},
		Short:   "Remove a ref (its snapshot stays)",
		Example: `  vfsd ref rm team/main`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		if err := c.DeleteRef(cmd.Context(), args[0]); err != nil {
			return err
		}
		return out.print(map[string]string{"deleted": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "removed ref %s\n", args[0]) })
	})
}
