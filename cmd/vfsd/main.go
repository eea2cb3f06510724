// Command vfsd is the vfsd daemon and its command-line interface: copy-on-
// write workspaces for AI agents. Run `vfsd help` for the verbs.
//
// Each verb lives in the file named for it, its sub-verbs with it: vfsd
// snapshot push in snapshot.go, vfsd session rewind in session.go, vfsd
// mount and unmount in mount.go, vfsd apply-patch in applypatch.go. What
// the verbs share is named for what it holds: client.go (the global
// flags, reaching the daemon, printing its answers), embedded.go (the
// daemon a verb runs inside itself when none is running), cliflags.go
// (deprecated flags, shell completion), policyfile.go, progress.go and
// term_*.go. The pieces with a job of their own are packages in
// internal/: bench, demo and sandbox (vfsd run's Linux sandbox).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
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
			return usageError{fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
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
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	// An unknown verb is a usage error too (cobra's own is a plain error):
	// with Args set, cobra hands the root what it did not recognise.
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
		}
		return usageError{fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath())}
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.SuggestionsMinimumDistance = 2
	root.Version = version()
	root.SetVersionTemplate("vfsd {{.Version}}\n")
	g := &globalFlags{}
	g.addTo(root)
	root.AddCommand(newBenchCmd(), newDemoCmd(), newToolCmd(g), newApplyPatchCmd(),
		newServeCmd(g), newCSICmd(g), newMCPCmd(g), newRunCmd(g), newNamespaceChildCmd(), newSessionCmd(g), newSnapshotCmd(g), newApplyCmd(g), newMountCmd(g), newUnmountCmd(g),
		newVersionCmd(g), newDiffCmd(g), newLogCmd(g), newRefCmd(g), newDaemonCmd(g))
	root.PersistentPreRunE = warnDeprecated
	root.AddCommand(newUICmd(g))
	completeSessions(root, g)
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
