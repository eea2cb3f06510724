package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newApplyPatchCmd is vfsd apply-patch: a V4A patch applied to a plain
// directory through a throwaway session (runOnDir, in tool.go).
func newApplyPatchCmd() *cobra.Command {
	var (
		dir    string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "apply-patch [--dir DIR] [--dry-run] < PATCH",
		Short: "Apply a V4A patch (Codex's apply_patch format) to a plain directory, all or nothing",
		Example: `  vfsd apply-patch < change.patch
  git diff | vfsd apply-patch --dir ../copy --dry-run    # V4A patches only; this one is refused`,
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
