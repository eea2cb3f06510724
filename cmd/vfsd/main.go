// Command vfsd is the vfsd daemon and its command-line interface: copy-on-
// write workspaces for AI agents. Run `vfsd help` for the verbs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed; stderr says why and what to do
	exitUsage = 2 // the command line was wrong
)

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitStatus ends vfsd with a given status, printing err if it is set.
type exitStatus struct {
	code int
	err  error
}

func (e exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e exitStatus) Unwrap() error { return e.err }

// usageArgs marks a positional-argument check's failures as usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{fmt.Errorf("%w (see 'vfsd %s --help')", err, cmd.CommandPath()[len("vfsd "):])}
		}
		return nil
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "vfsd",
		Short: "Copy-on-write workspaces for AI agents",
		Long: `vfsd gives every AI-agent session a copy-on-write workspace. vfsd serve runs
the daemon; the session, tool, snapshot, apply, mount and unmount verbs talk to
it over its Unix socket (--socket, env VFSD_SOCKET) or over TCP (--addr, env
VFSD_ADDR, with --token or VFSD_TOKEN). Every such verb prints text, or the
daemon's JSON with --json.

Exit codes: 0 success; 1 the command failed (stderr says why and what to do);
2 the command line was wrong.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see 'vfsd %s --help')", err, c.Name())}
	})
	g := &globalFlags{}
	g.addTo(root)
	root.AddCommand(newBenchCmd(), newDemoCmd(), newToolCmd(g), newApplyPatchCmd(),
		newServeCmd(g), newMCPCmd(g), newRunCmd(g), newNamespaceChildCmd(), newSessionCmd(g), newSnapshotCmd(g), newApplyCmd(g), newMountCmd(g), newUnmountCmd(g),
		newLogCmd(g))
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRoot().ExecuteContext(ctx)
	if err == nil {
		os.Exit(exitOK)
	}
	var ee exitStatus
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "vfsd:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "vfsd:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(exitUsage)
	}
	os.Exit(exitError)
}
