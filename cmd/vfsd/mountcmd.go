package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
)

func newMountCmd(g *globalFlags) *cobra.Command {
	var req api.MountRequest
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "mount SESSION DIR [--backend fuse|overlay|auto] [--read-only] [--allow-other] [--uid UID --gid GID] [--no-default-permissions]",
		Short: "Mount a session at a host directory through FUSE or the kernel overlay (the daemon mounts it)",
		Long: `Has the daemon mount SESSION at the existing directory DIR: programs (a
container bind-mounting DIR, say) then work on the very files the session's
tools change. The mount lasts until vfsd unmount DIR or the session closes, and
comes back when the daemon restarts.

Files keep POSIX owners, modes (setuid, setgid, sticky), hard links, fifos,
sockets, devices, extended attributes and nanosecond times. The kernel checks
permissions against them (FUSE default_permissions), as on a local file
system: a user cannot read another's 0600 file, chmod what it does not own,
or delete another's file from a sticky directory.

--allow-other lets other users in (a container running as another uid).
--uid/--gid name the user (the container's) that stands for the session's
default owner (the daemon's user): files it owns show as owned by UID/GID,
and what UID/GID create is stored as its; other owners show as they are.
--no-default-permissions turns the kernel's checks off (not with
--allow-other): every caller may then do what the daemon's user may,
whatever owners and modes say. It gains nothing measurable; use it only to
debug permission problems.

--backend overlay has the kernel serve the session (overlayfs: a metadata
layer built from the session over the blob store, and an upper directory
for changes): native speed, for a daemon running as root on Linux 6.5+.
What programs change there reaches the session at snapshot, diff, apply,
unmount and before each tool call; tools' changes appear in the mount at
once. It maps no uid/gid (--uid/--gid need FUSE); --allow-other and the
permission flags do not apply (the kernel always checks permissions).
--backend auto picks overlay where it can, FUSE otherwise.`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		dir, err := filepath.Abs(args[1])
		if err != nil {
			return usageError{err}
		}
		req.Dir = dir
		fm, err := c.Mount(cmd.Context(), args[0], req)
		if err != nil {
			return err
		}
		return out.print(fm, func(w io.Writer) { fmt.Fprintf(w, "mounted session %s at %s\n", args[0], fm.Dir) })
	})
	cmd.Flags().StringVar(&req.Backend, "backend", api.BackendFUSE, "fuse (any user; live and coherent), overlay (the kernel's overlayfs: native speed; root, Linux 6.5+) or auto (overlay where the daemon can mount it, FUSE otherwise)")
	cmd.Flags().BoolVar(&req.ReadOnly, "read-only", false, "refuse every change through the mount")
	cmd.Flags().BoolVar(&req.AllowOther, "allow-other", false, "let other users in (for containers running as another uid); implies the kernel's permission checks (default_permissions)")
	cmd.Flags().Uint32Var(&req.UID, "uid", 0, "the user standing for the session's default owner in the mount (default: that owner itself)")
	cmd.Flags().Uint32Var(&req.GID, "gid", 0, "the group standing for the session's default group in the mount (default: that group itself)")
	cmd.Flags().BoolVar(&req.NoDefaultPermissions, "no-default-permissions", false, "turn off the kernel's permission checks: any caller may do what the daemon's user may (debugging only; ignored with --allow-other)")
	return cmd
}

func newUnmountCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:   "unmount DIR",
		Short: "Unmount the session mounted at DIR",
		Args:  usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		dir, err := filepath.Abs(args[0])
		if err != nil {
			return usageError{err}
		}
		sessions, err := c.Sessions(cmd.Context())
		if err != nil {
			return err
		}
		for _, s := range sessions {
			for _, fm := range s.FuseMounts {
				if fm.Dir != dir {
					continue
				}
				if err := c.Unmount(cmd.Context(), s.ID, dir); err != nil {
					return err
				}
				return out.print(map[string]string{"session": s.ID, "unmounted": dir}, func(w io.Writer) {
					fmt.Fprintf(w, "unmounted session %s from %s\n", s.ID, dir)
				})
			}
		}
		return errors.New("no session is mounted at " + dir + "; vfsd session list shows the sessions, vfsd session show SESSION their mounts")
	})
}
