package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs/policy"
)

// errNotOK makes the process exit non-zero after a receipt whose status is
// not ok was printed; the receipt says why.
var errNotOK = errors.New("the tool call did not succeed (see the receipt's status and summary_text)")

func newToolCmd() *cobra.Command {
	var (
		dir, params, preset string
		dryRun              bool
	)
	cmd := &cobra.Command{
		Use:   "tool --dir DIR NAME [--json PARAMS]",
		Short: "Run one agent tool on a plain directory, through a throwaway session",
		Long: `Stages DIR into a throwaway session, runs the tool NAME with the JSON
parameters PARAMS, prints the receipt as JSON, and — when the call succeeds and
changed something — applies the session's changes back to DIR (a file changed
in DIR meanwhile is a conflict and left alone). Exits 1 when the receipt's
status is not ok. Tools: ` + fmt.Sprint(tools.Names()) + `.

(Calling a tool on a daemon's session, vfsd tool SESSION NAME, comes with the
daemon.)`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageError{errors.New("--dir DIR is required (the daemon form, vfsd tool SESSION NAME, is not built yet)")}
			}
			if params == "" {
				params = "{}"
			}
			return runOnDir(cmd.Context(), dir, preset, dryRun, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], json.RawMessage(params))
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the directory to work on")
	cmd.Flags().StringVar(&params, "json", "{}", "the tool's parameters, a JSON object")
	cmd.Flags().StringVar(&preset, "policy", "default", "policy preset: "+fmt.Sprint(policy.Presets()))
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "run the tool but apply nothing back to DIR")
	return cmd
}

func newApplyPatchCmd() *cobra.Command {
	var (
		dir    string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "apply-patch [--dir DIR] [--dry-run] < PATCH",
		Short: "Apply a V4A patch (Codex's apply_patch format) to a plain directory, all or nothing",
		Long: `Reads a V4A patch (*** Begin Patch ... *** End Patch) from stdin and applies
it to DIR (default: the current directory) through a throwaway session: the
whole patch applies or nothing changes. Prints the receipt as JSON (per-file
diffs included) and exits 1 when the patch does not apply.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			patch, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("read the patch from stdin: %w", err)
			}
			params, _ := json.Marshal(map[string]any{"patch": string(patch), "dry_run": dryRun})
			if dir == "" {
				dir = "."
			}
			return runOnDir(cmd.Context(), dir, "default", dryRun, cmd.OutOrStdout(), cmd.ErrOrStderr(), "apply_patch", params)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the directory to patch (default: the current directory)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check the patch and print the diffs, change nothing")
	return cmd
}

// runOnDir runs one tool call on a session staged from dir and applies
// the result back.
func runOnDir(ctx context.Context, dir, preset string, dryRun bool, out, errOut io.Writer, name string, params json.RawMessage) error {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("--dir %s: %w", dir, err)
	}
	pol, err := policy.Preset(preset)
	if err != nil {
		return usageError{err}
	}
	work, err := os.MkdirTemp("", "vfsd-tool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	store, err := snapshot.OpenLocal(filepath.Join(work, "store"))
	if err != nil {
		return err
	}
	defer store.Close()
	repo, err := snapshot.OpenRepo(ctx, store, filepath.Join(work, "sessions"), snapshot.RepoOptions{})
	if err != nil {
		return err
	}
	defer repo.Close()
	im, err := hostmount.New(hostmount.Options{Roots: []string{abs}, ASCIIOnly: pol.ASCIIOnly})
	if err != nil {
		return err
	}
	defer im.Close()
	mounts := []hostmount.Mount{{HostPath: abs, MountPath: "/"}}
	s, rep, err := im.Stage(ctx, repo, snapshot.SessionOptions{}, mounts, nil)
	if err != nil {
		return fmt.Errorf("stage %s: %w", abs, err)
	}
	ts, err := tools.New(s, tools.Options{Policy: pol, Blobs: repo.Blobs()})
	if err != nil {
		return err
	}
	resp := ts.Call(ctx, s.ID(), name, params)
	fmt.Fprintf(out, "%s\n", resp.JSON())
	if !resp.OK() {
		return errNotOK
	}
	if dryRun {
		return nil
	}
	ar, err := im.Apply(ctx, repo, rep.Snapshot, s, mounts, hostmount.ApplyOptions{})
	if err != nil {
		return fmt.Errorf("apply the changes to %s: %w", abs, err)
	}
	for _, c := range ar.Conflicts {
		fmt.Fprintf(errOut, "vfsd: not applied: %s: %s\n", c.HostPath, c.Conflict)
	}
	if len(ar.Conflicts) > 0 {
		return fmt.Errorf("%d changes were not applied because %s changed meanwhile; run the tool again", len(ar.Conflicts), abs)
	}
	return nil
}
