package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

func newSnapshotCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Snapshot, list, show, restore, fork, diff and delete snapshots; collect garbage",
		Example: `  vfsd snapshot create review --label "tests pass"
  vfsd snapshot list --session review
  vfsd snapshot restore review 3f2a9c`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("name a verb: %s", verbs(cmd))}
		},
	}
	cmd.AddCommand(newSnapshotCreateCmd(g), newSnapshotListCmd(g), newSnapshotShowCmd(g), newSnapshotRestoreCmd(g),
		newSnapshotForkCmd(g), newSnapshotDiffCmd(g), newSnapshotRmCmd(g), newSnapshotGCCmd(g),
		newSnapshotPushCmd(g), newSnapshotRemoteCmd(g))
	return cmd
}

func newSnapshotCreateCmd(g *globalFlags) *cobra.Command {
	var (
		label string
		pf    progressFlag
	)
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "create SESSION [--label TEXT]",
		Short: "Snapshot a session's current state",
		Example: `  vfsd snapshot create review
  vfsd snapshot create review --label "before the refactor"`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		var snap *api.Snapshot
		var err error
		if pp := pf.printer(cmd); pp != nil {
			snap, err = c.CreateSnapshotProgress(cmd.Context(), args[0], label, pp.show)
			pp.done()
		} else {
			snap, err = c.CreateSnapshot(cmd.Context(), args[0], label)
		}
		if err != nil {
			return err
		}
		return out.print(snap, func(w io.Writer) {
			fmt.Fprintf(w, "snapshot %s of session %s (%d files, %s)\n", snap.ID, snap.Session, snap.Files, sizeText(snap.Bytes))
		})
	})
	cmd.Flags().StringVar(&label, "label", "", "a note to remember the snapshot by")
	pf.add(cmd)
	return cmd
}

func newSnapshotListCmd(g *globalFlags) *cobra.Command {
	var session string
	var local bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "list [--session SESSION] [--local]",
		Short: "List snapshots, newest first: this daemon's and, with a remote, the fleet's",
		Example: `  vfsd snapshot list
  vfsd snapshot list --local             # this daemon's only
  vfsd snapshot list --session review --json | jq -r '.snapshots[0].id'`,
		Args: usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		sl, err := c.SnapshotList(cmd.Context(), session, local)
		if err != nil {
			return err
		}
		list := sl.Snapshots
		if sl.FleetError != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "vfsd: "+sl.FleetError)
		}
		return out.print(sl, func(w io.Writer) {
			if len(list) == 0 {
				fmt.Fprintln(w, "no snapshots; take one with vfsd snapshot create SESSION")
				return
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fleet := false
			for _, s := range list {
				fleet = fleet || s.Daemon != ""
			}
			if !fleet {
				fmt.Fprintln(tw, "ID\tCREATED\tSESSION\tFILES\tSIZE\tLABEL")
			} else {
				fmt.Fprintln(tw, "ID\tCREATED\tSESSION\tDAEMON\tWHERE\tFILES\tSIZE\tLABEL")
			}
			for _, s := range list {
				if !fleet {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", short(s.ID), s.CreatedAt.Local().Format(time.DateTime),
						orDash(s.Session), s.Files, sizeText(s.Bytes), s.Label)
					continue
				}
				where := "local"
				if s.Remote {
					where = "remote"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", short(s.ID), s.CreatedAt.Local().Format(time.DateTime),
					orDash(s.Session), orDash(s.Daemon), where, s.Files, sizeText(s.Bytes), s.Label)
			}
			tw.Flush()
		})
	})
	cmd.Flags().StringVar(&session, "session", "", "only the snapshots taken of this session")
	cmd.Flags().BoolVar(&local, "local", false, "list this daemon's snapshots only, not the fleet's")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSnapshotShowCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "show SNAPSHOT",
		Short:   "Show a snapshot (by ID or unique prefix)",
		Example: `  vfsd snapshot show 3f2a9c`,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		s, err := c.Snapshot(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) {
			fmt.Fprintf(w, "snapshot  %s\ncreated   %s\nsession   %s\nlabel     %s\nparent    %s\nfiles     %d (%s)\nmanifests %d\n",
				s.ID, s.CreatedAt.Local().Format(time.DateTime), orDash(s.Session), orDash(s.Label), orDash(s.Parent),
				s.Files, sizeText(s.Bytes), s.Manifests)
		})
	})
}

func newSnapshotRestoreCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "restore SESSION SNAPSHOT",
		Short:   "Return a session to a snapshot (its changes since are dropped)",
		Example: `  vfsd snapshot restore review 3f2a9c`,
		Args:    usageArgs(cobra.ExactArgs(2)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		s, err := c.Restore(cmd.Context(), args[0], args[1])
		if err != nil {
			return err
		}
		return out.print(s, func(w io.Writer) {
			fmt.Fprintf(w, "restored session %s to snapshot %s (%d files)\n", s.ID, short(s.LastSnapshot), s.Files)
		})
	})
}

func newSnapshotForkCmd(g *globalFlags) *cobra.Command {
	var (
		sf               sessionFlags
		session, fromRef string
	)
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "fork (SNAPSHOT | --session SESSION | --from-ref REF) [--id ID] [--policy P | --policy-file F] [--ttl D]",
		Short: "Create a session from a snapshot, a ref of the fleet, or a live session's current state",
		Example: `  vfsd snapshot fork 3f2a9c --id try-2
  vfsd snapshot fork --from-ref team/main --id try-3
  vfsd snapshot fork --session review --id review-b --ttl 2h`,
		Args: func(cmd *cobra.Command, args []string) error {
			if session != "" && fromRef != "" {
				return usageError{fmt.Errorf("give --session or --from-ref, not both")}
			}
			if session != "" || fromRef != "" {
				return usageArgs(cobra.NoArgs)(cmd, args)
			}
			return usageArgs(cobra.ExactArgs(1))(cmd, args)
		},
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		var resp *api.CreateSessionResponse
		req := sf.request()
		err := setPolicy(cmd, &req, sf.policy, sf.policyFile)
		if err != nil {
			return err
		}
		switch {
		case session != "":
			resp, err = c.ForkSession(cmd.Context(), session, req)
		case fromRef != "":
			req.FromRef = fromRef
			resp, err = c.CreateSession(cmd.Context(), req)
		default:
			resp, err = c.ForkSnapshot(cmd.Context(), args[0], req)
		}
		if err != nil {
			return err
		}
		return out.print(resp, func(w io.Writer) { printCreated(w, resp) })
	})
	sf.add(cmd)
	cmd.Flags().StringVar(&session, "session", "", "fork this live session instead of a snapshot")
	cmd.Flags().StringVar(&fromRef, "from-ref", "", "fork the snapshot this ref of the fleet points at (vfsd ref list)")
	return cmd
}

func newSnapshotDiffCmd(g *globalFlags) *cobra.Command {
	var session, from, to string
	var stat bool
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "diff (FROM TO | --session SESSION [--from REF] [--to REF]) [--stat]",
		Short: "Show what differs between two snapshots or sessions, as a unified diff",
		Example: `  vfsd snapshot diff --session review --from import    # what apply would write (also: vfsd diff review)
  vfsd snapshot diff 3f2a9c 8be01d --stat
  vfsd snapshot diff 3f2a9c session:review`,
		Long: `Prints a unified diff (--stat: one line per path; --json: the daemon's JSON).

vfsd snapshot diff FROM TO compares two states, each a snapshot ID (or unique
prefix) or session:ID for a session's current state.

vfsd snapshot diff --session SESSION compares two states of one session, each
base (what it started from), import (its host folders as last imported or
applied), live (its current state) or a snapshot of it: by default, base to
live — what the agent changed.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if session != "" {
				return usageArgs(cobra.NoArgs)(cmd, args)
			}
			if from != "" || to != "" {
				return usageError{fmt.Errorf("--from and --to go with --session; without it give FROM and TO as arguments")}
			}
			return usageArgs(cobra.ExactArgs(2))(cmd, args)
		},
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		q := client.DiffQuery{From: from, To: to}
		if session == "" {
			q.From, q.To = args[0], args[1]
		}
		return printDiff(cmd, c, out, session, q, stat)
	})
	cmd.Flags().StringVar(&session, "session", "", "compare two states of this session")
	cmd.Flags().StringVar(&from, "from", "", "with --session: base, import, live or a snapshot (default base)")
	cmd.Flags().StringVar(&to, "to", "", "with --session: base, import, live or a snapshot (default live)")
	cmd.Flags().BoolVar(&stat, "stat", false, "list the changed paths instead of the diff")
	return cmd
}

// printDiff prints the diff q of session (or, with session "", of two
// global states): unified, --stat's one line per path, or --json's JSON.
func printDiff(cmd *cobra.Command, c *client.Client, out *output, session string, q client.DiffQuery, stat bool) error {
	q.Text = out.json
	if out.json || stat {
		var d *api.Diff
		var err error
		if session != "" {
			d, err = c.SessionDiff(cmd.Context(), session, q)
		} else {
			d, err = c.Diff(cmd.Context(), q)
		}
		if err != nil {
			return err
		}
		return out.print(d, func(w io.Writer) {
			for _, e := range d.Entries {
				fmt.Fprintf(w, "%-8s %-7s %s\n", e.Change, e.Kind, textdiff.ShowText(e.Path))
			}
			fmt.Fprintf(w, "%d added, %d modified, %d deleted\n", d.Added, d.Modified, d.Deleted)
		})
	}
	var text string
	var err error
	if session != "" {
		text, err = c.SessionDiffText(cmd.Context(), session, q)
	} else {
		text, err = c.DiffText(cmd.Context(), q)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(cmd.OutOrStdout(), text)
	return err
}

func newSnapshotGCCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:     "gc",
		Short:   "Delete the stored content no snapshot or session references",
		Example: `  vfsd snapshot rm 3f2a9c && vfsd snapshot gc`,
		Args:    usageArgs(cobra.NoArgs),
	}, func(cmd *cobra.Command, _ []string, c *client.Client, out *output) error {
		r, err := c.GC(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(r, func(w io.Writer) {
			fmt.Fprintf(w, "deleted %d of %d blobs (%s) in %.0f ms; %d snapshots and %d sessions reference the rest\n",
				r.Deleted, r.Scanned, sizeText(r.DeletedBytes), r.DurationMs, r.Snapshots, r.Sessions)
			if r.Packs > 0 || r.ImportCaches > 0 {
				fmt.Fprintf(w, "dropped %d manifest packs of deleted snapshots and %d host import caches\n", r.Packs, r.ImportCaches)
			}
		})
	})
}

func newSnapshotRmCmd(g *globalFlags) *cobra.Command {
	var session string
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "rm SNAPSHOT... [--session SESSION]",
		Short: "Delete snapshots (vfsd snapshot gc then reclaims their content)",
		Example: `  vfsd snapshot rm 3f2a9c 8be01d
  vfsd snapshot rm 3f2a9c && vfsd snapshot gc`,
		Long: `Deletes snapshots by ID or unique prefix, one at a time, stopping at the first
that cannot go. A snapshot a live session started from, or its import
snapshot, is refused (conflict) until that session closes. With --session, the
snapshots must be that session's, as a session token requires. The content
only they referenced is reclaimed by the next vfsd snapshot gc. On a daemon
with a remote (vfsd serve --remote), the snapshots leave the remote too, and
vfsd snapshot remote --gc reclaims their blobs there after the grace period.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		deleted := api.DeleteSnapshotsResponse{Deleted: []string{}}
		for _, ref := range args {
			var r *api.DeleteSnapshotsResponse
			var err error
			if session != "" {
				r, err = c.DeleteSessionSnapshot(cmd.Context(), session, ref)
			} else {
				r, err = c.DeleteSnapshot(cmd.Context(), ref)
			}
			if err != nil {
				if len(deleted.Deleted) > 0 {
					return fmt.Errorf("%w (deleted before it: %v)", err, deleted.Deleted)
				}
				return err
			}
			deleted.Deleted = append(deleted.Deleted, r.Deleted...)
		}
		return out.print(deleted, func(w io.Writer) {
			for _, id := range deleted.Deleted {
				fmt.Fprintf(w, "deleted snapshot %s\n", id)
			}
			fmt.Fprintln(w, "run vfsd snapshot gc to reclaim their content")
		})
	})
	cmd.Flags().StringVar(&session, "session", "", "delete through this session's route (its own snapshots only)")
	return cmd
}

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
			fmt.Fprintf(w, "pushed %s: %d objects uploaded (%d blobs, %d of them in %d packs, %s), %d already in the remote, in %.0f ms\n",
				r.Snapshot, r.Uploaded, r.UploadedBlobs, r.UploadedBlobs-(r.Uploaded-r.UploadedPacks-r.UploadedRecords), r.UploadedPacks, sizeText(r.UploadedBytes), r.Present, r.DurationMs)
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
				if r.BlobPacks > 0 {
					fmt.Fprintf(w, "packs: %d, %d deleted, %d repacked without their unreferenced blobs\n", r.BlobPacks, r.PacksDeleted, r.PacksRepacked)
				}
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
