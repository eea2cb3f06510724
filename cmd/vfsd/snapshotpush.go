package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
)

func newSnapshotPushCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "push SNAPSHOT",
		Example: `  vfsd snapshot push 3f2a9c                # needs vfsd serve --remote s3://bucket/prefix?endpoint=...`,
		Short:   "Upload a snapshot to the daemon's --remote (only what the remote lacks)",
		Long: `Uploads a snapshot to the S3-compatible store the daemon was started with
(vfsd serve --remote): the blobs and manifest records the remote lacks, in
parallel, then the snapshot's record. A daemon with a remote pushes every
snapshot in the background after taking it; this pushes one now and waits.
Another daemon with the same remote can then fork or restore it by ID.`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		r, err := c.PushSnapshot(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			fmt.Fprintf(w, "pushed %s: %d objects uploaded (%d blobs, %s), %d already in the remote, in %.0f ms\n",
				r.Snapshot, r.Uploaded, r.UploadedBlobs, sizeText(r.UploadedBytes), r.Present, r.DurationMs)
		})
	})
}

func newSnapshotRemoteCmd(g *globalFlags) *cobra.Command {
	var gc bool
	cmd := remoteCmd(g, &cobra.Command{
		Use: "remote [--gc]",
		Example: `  vfsd snapshot remote                     # the remote's URL, queue and cache
  vfsd snapshot remote --gc                # delete unreferenced remote blobs older than the grace period`,
		Short: "Show the daemon's remote: pending pushes, the local cache of fetched blobs; --gc collects its garbage",
		Args:  usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		if gc {
			r, err := c.RemoteGC(cmd.Context())
			if err != nil {
				return err
			}
			return out.print(r, func(w io.Writer) {
				fmt.Fprintf(w, "deleted %d of %d remote blobs (%s); %d snapshots reference %d; %d unreferenced kept as younger than %.0fs\n",
					r.Deleted, r.Scanned, sizeText(r.DeletedBytes), r.Snapshots, r.Marked, r.Young, r.GraceS)
			})
		}
		r, err := c.RemoteStatus(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			if r.URL == "" {
				fmt.Fprintln(w, "no remote (vfsd serve --remote s3://BUCKET/PREFIX)")
				return
			}
			fmt.Fprintf(w, "remote %s\n%d pushes pending", r.URL, len(r.Pending))
			if r.LastError != "" {
				fmt.Fprintf(w, " (last error: %s)", r.LastError)
			}
			fmt.Fprintf(w, "\ncache: %d blobs, %s of %s\n", r.CacheBlobs, sizeText(r.CacheBytes), sizeText(r.CacheLimit))
		})
	})
	cmd.Flags().BoolVar(&gc, "gc", false, "delete the remote's blobs no snapshot references, older than the grace period")
	return cmd
}
