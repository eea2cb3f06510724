package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
)

func newDaemonCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "The fleet's daemons (those sharing the daemon's --remote)",
		Example: `  vfsd daemon list
  vfsd daemon list --json | jq -r '.daemons[] | select(.alive) | .name'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("name a verb: %s", verbs(cmd))}
		},
	}
	cmd.AddCommand(remoteCmd(g, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the fleet's daemons by their heartbeats in the bucket",
		Example: `  vfsd daemon list`,
		Args:    usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		l, err := c.Daemons(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(l, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tHEARTBEAT\tSESSIONS\tVERSION")
			for _, d := range l.Daemons {
				state := "gone"
				if d.Alive {
					state = "alive"
				}
				name := d.Name
				if d.Self {
					name += " (this one)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s ago\t%d\t%s\n", name, state, time.Since(d.Heartbeat).Round(time.Second), d.Sessions, d.Version)
			}
			tw.Flush()
		})
	}))
	return cmd
}
