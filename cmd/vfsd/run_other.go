//go:build !linux

package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/cmd/vfsd/internal/sandbox"
)

// newRunCmd is `vfsd run` where it cannot run: it needs a FUSE mount and a
// Linux sandbox. It takes any arguments and fails with a message that says
// what to use instead.
func newRunCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:                "run [--dir DIR | --session SESSION] ... -- CMD [ARG]...",
		Short:              "Run a command on a copy-on-write session of a folder (Linux only)",
		Example:            "  vfsd run -- make test    # Linux only; elsewhere: vfsd session create, vfsd tool",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("vfsd run: FUSE mounts need Linux; use the tools/API (this is %s): create a session with 'vfsd session create' and work in it with 'vfsd tool' or the API", runtime.GOOS)
		},
	}
}

// newNamespaceChildCmd is the namespace sandbox's hidden child verb; it
// has no sandbox to set up here.
func newNamespaceChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    sandbox.ChildVerb,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("the namespace sandbox needs Linux")
		},
	}
}
