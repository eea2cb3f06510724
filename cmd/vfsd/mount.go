package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

func newMountCmd(g *globalFlags) *cobra.Command {
	var req api.MountRequest
	cmd := remoteCmd(g, &cobra.Command{
		Use:   "mount SESSION DIR [--backend fuse|overlay|auto] [--read-only] [--allow-other] [--uid UID --gid GID] [--no-default-permissions] [--allow-setid] [--allow-devices] | mount",
		Short: "Mount a session at a host directory through FUSE or the kernel overlay (the daemon mounts it)",
		Long: `Has the daemon mount SESSION at the existing, empty directory DIR: programs
(a container bind-mounting DIR, say) then work on the very files the session's
tools change. The mount lasts until vfsd unmount DIR or the session closes, and
comes back when the daemon restarts. A directory that holds files, or where
something is mounted already, is refused. With no arguments, vfsd mount lists
the sessions' mounts.

A mount needs a running daemon (vfsd serve): it lasts as long as the daemon
does. (vfsd run mounts a session for the length of one command without one.)

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

Every mount is nosuid and nodev: set-user-ID and set-group-ID bits, file
capabilities (security.capability) and device nodes are kept in the session
(chmod 4755, setcap and mknod work and show) but never take effect through
the mount, so whoever was root inside it — a vfsd run command, say — cannot
become root on the host or reach its devices through it. --allow-setid and
--allow-devices (admin only, as every mount) lift nosuid and nodev for a
mount whose files you trust.

--backend overlay has the kernel serve the session (overlayfs: a metadata
layer built from the session over the blob store, and an upper directory
for changes): native speed, for a daemon running as root on Linux 6.5+.
What programs change there reaches the session at snapshot, diff, apply,
unmount and before each tool call; tools' changes appear in the mount at
once. It maps no uid/gid (--uid/--gid need FUSE); --allow-other and the
permission flags do not apply (the kernel always checks permissions).
--backend auto picks overlay where it can, FUSE otherwise.`,
		Example: `  vfsd mount                                   # list the mounts
  vfsd mount review /mnt/review
  vfsd mount review /mnt/review --allow-other --uid 1000 --gid 1000   # for a container running as 1000
  vfsd mount review /mnt/ro --read-only --backend auto
  vfsd unmount /mnt/review`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return usageError{fmt.Errorf("give SESSION and DIR to mount, or nothing to list the mounts (see '%s --help')", cmd.CommandPath())}
			}
			return usageArgs(cobra.RangeArgs(0, 2))(cmd, args)
		},
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		if len(args) == 0 {
			return listMounts(cmd, c, out)
		}
		dir, err := filepath.Abs(args[1])
		if err != nil {
			return usageError{err}
		}
		req.Dir = dir
		fm, err := c.Mount(cmd.Context(), args[0], req)
		if err != nil {
			return err
		}
		return out.print(fm, func(w io.Writer) {
			fmt.Fprintf(w, "mounted session %s at %s with %s\n", args[0], fm.Dir, backendText(fm))
		})
	})
	cmd.Flags().StringVar(&req.Backend, "backend", api.BackendFUSE, "fuse (any user; live and coherent), overlay (the kernel's overlayfs: native speed; root, Linux 6.5+) or auto (overlay where the daemon can mount it, FUSE otherwise)")
	cmd.Flags().BoolVar(&req.ReadOnly, "read-only", false, "refuse every change through the mount")
	cmd.Flags().BoolVar(&req.AllowOther, "allow-other", false, "let other users in (for containers running as another uid); implies the kernel's permission checks (default_permissions)")
	cmd.Flags().Uint32Var(&req.UID, "uid", 0, "the user standing for the session's default owner in the mount (default: that owner itself)")
	cmd.Flags().Uint32Var(&req.GID, "gid", 0, "the group standing for the session's default group in the mount (default: that group itself)")
	cmd.Flags().BoolVar(&req.NoDefaultPermissions, "no-default-permissions", false, "turn off the kernel's permission checks: any caller may do what the daemon's user may (debugging only; ignored with --allow-other)")
	cmd.Flags().BoolVar(&req.AllowSetID, "allow-setid", false, "mount without nosuid: the session's set-ID bits and file capabilities take effect when run from the mount (only for files you trust)")
	cmd.Flags().BoolVar(&req.AllowDevices, "allow-devices", false, "mount without nodev: the session's device nodes open host devices (only for files you trust)")
	return withHostAccess(cmd, hostAccess{live: func(args []string) string {
		if len(args) == 0 {
			return "" // the list
		}
		return "a mount lasts as long as the daemon that serves it"
	}})
}

// mountRow is one mount in vfsd mount's list.
type mountRow struct {
	Session string `json:"session"`
	api.FuseMount
	// Down says the mount is recorded but not mounted: no daemon is
	// running, and the next vfsd serve mounts it again.
	Down bool `json:"down,omitempty"`
}

// listMounts prints every session's mounts.
func listMounts(cmd *cobra.Command, c *client.Client, out *output) error {
	sessions, err := c.Sessions(cmd.Context())
	if err != nil {
		return err
	}
	down := embeddedOf(cmd) != nil
	rows := []mountRow{}
	for _, s := range sessions {
		for _, fm := range s.FuseMounts {
			rows = append(rows, mountRow{Session: s.ID, FuseMount: fm, Down: down})
		}
	}
	return out.print(map[string][]mountRow{"mounts": rows}, func(w io.Writer) {
		if len(rows) == 0 {
			fmt.Fprintln(w, "no mounts; mount a session with vfsd mount SESSION DIR")
			return
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DIR\tSESSION\tBACKEND\tOPTIONS")
		for _, r := range rows {
			var opts []string
			if r.ReadOnly {
				opts = append(opts, "read-only")
			}
			if r.AllowOther {
				opts = append(opts, "allow-other")
			}
			if r.UID != 0 || r.GID != 0 {
				opts = append(opts, fmt.Sprintf("uid=%d,gid=%d", r.UID, r.GID))
			}
			if r.NoDefaultPermissions {
				opts = append(opts, "no-default-permissions")
			}
			if r.AllowSetID {
				opts = append(opts, "allow-setid")
			}
			if r.AllowDevices {
				opts = append(opts, "allow-devices")
			}
			if r.Down {
				opts = append(opts, "down (no daemon is running; vfsd serve mounts it again)")
			}
			backend := r.Backend
			if backend == "" {
				backend = api.BackendFUSE
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", textdiff.ShowText(r.Dir), r.Session, backend, orDash(strings.Join(opts, " ")))
		}
		tw.Flush()
	})
}

func newUnmountCmd(g *globalFlags) *cobra.Command {
	return remoteCmd(g, &cobra.Command{
		Use:   "unmount DIR",
		Short: "Unmount the session mounted at DIR",
		Example: `  vfsd unmount /mnt/review
  vfsd mount                 # the mounts, to find DIR`,
		Args: usageArgs(cobra.ExactArgs(1)),
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
		return errors.New("no session is mounted at " + dir + "; vfsd mount (with no arguments) lists the mounts")
	})
}

// backendText names the backend serving a mount, and why it does.
func backendText(fm *api.FuseMount) string {
	t := mountBackendText(fm.Backend)
	if fm.BackendWhy != "" {
		t += " (" + fm.BackendWhy + ")"
	}
	return t
}
