package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/hostmount"
	"github.com/vfsd/vfsd/internal/textdiff"
	"github.com/vfsd/vfsd/snapshot"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// errNotOK makes the process exit non-zero after a receipt whose status is
// not ok was printed; the receipt says why.
var errNotOK = errors.New("the tool call did not succeed (see the receipt's status and summary_text)")

func newToolCmd(g *globalFlags) *cobra.Command {
	var (
		dir, params, oldParams string
		preset, contractName   string
		dryRun, text           bool
	)
	cmd := &cobra.Command{
		Use:   "tool SESSION NAME [--params PARAMS] | tool --dir DIR NAME [--params PARAMS]",
		Short: "Run one agent tool on a daemon's session, or on a plain directory",
		Long: `Runs the tool NAME with the JSON parameters PARAMS (inline, - for stdin, or
@FILE) and prints the receipt as JSON (--text: the receipt's rendering for a
model). Exits 1 when the receipt's status is not ok. Tools: ` + fmt.Sprint(tools.Names()) + `.

vfsd tool SESSION NAME calls the tool on the daemon's session SESSION (see
--socket, --addr and --token), under the session's contract (its tool names,
parameters and results; see 'vfsd session create --contract'). --contract C
states the contract the call is written for: a session with another contract
refuses the call (invalid_input), so a script never runs an x07 call on an AOS
session by mistake. The exit status follows the contract's own verdict.

vfsd tool --dir DIR NAME needs no daemon: it stages DIR into a throwaway
session, runs the tool, and — when the call succeeds and changed something —
applies the session's changes back to DIR (a file changed in DIR meanwhile is a
conflict and left alone). With --contract C, NAME and PARAMS are the
contract's, and its result is printed.

(--params was called --json before; --json PARAMS still works and warns. In
every other verb --json asks for JSON output, which is what vfsd tool prints
already.)`,
		Example: `  vfsd tool review read_file --params '{"path":"main.go"}'
  vfsd tool review edit_file --params @edit.json
  echo '{"pattern":"TODO"}' | vfsd tool review grep --params -
  vfsd tool review list_directory --text                # the receipt as a model reads it
  vfsd tool --dir . edit_file --params '{"path":"a.txt","old_string":"x","new_string":"y"}'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if dir != "" {
				return usageArgs(cobra.ExactArgs(1))(cmd, args)
			}
			if len(args) != 2 {
				return usageError{fmt.Errorf("give SESSION and NAME (or --dir DIR and NAME); got %d arguments (see 'vfsd tool --help')", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("json") {
				if cmd.Flags().Changed("params") {
					return usageError{errors.New("give the parameters once, with --params (--json is its old name)")}
				}
				params = oldParams
			}
			p, err := readParams(params, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if dir != "" {
				if text {
					return usageError{errors.New("--text goes with a daemon's session, not --dir")}
				}
				if contractName != "" && contractName != contract.Default {
					return runContractOnDir(cmd.Context(), dir, preset, contractName, dryRun, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], p)
				}
				return runOnDir(cmd.Context(), dir, preset, dryRun, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], p)
			}
			if cmd.Flags().Changed("policy") || dryRun {
				return usageError{errors.New("--policy and --dry-run go with --dir; a daemon session has its own policy, and tools take dry_run in PARAMS")}
			}
			return callOnSession(cmd, g, args[0], args[1], p, text, contractName)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "work on this plain directory instead of a daemon's session")
	cmd.Flags().StringVar(&params, "params", "{}", "the tool's parameters: a JSON object, - for stdin, or @FILE")
	cmd.Flags().StringVar(&oldParams, "json", "{}", "the old name of --params")
	deprecateFlag(cmd, "json", "--params")
	cmd.Flags().StringVar(&preset, "policy", "default", "with --dir: policy preset: "+fmt.Sprint(policy.Presets()))
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "with --dir: run the tool but apply nothing back to DIR")
	cmd.Flags().BoolVar(&text, "text", false, "with SESSION: print the receipt's text rendering for a model instead of its JSON")
	cmd.Flags().StringVar(&contractName, "contract", "", "the contract the call is written for: "+strings.Join(contract.Names(), ", ")+"; with SESSION it must be the session's")
	return cmd
}

// callOnSession runs one tool call on a daemon's session.
func callOnSession(cmd *cobra.Command, g *globalFlags, session, name string, params json.RawMessage, text bool, contractName string) error {
	c, stop, err := connect(cmd, g, []string{session})
	if err != nil {
		return err
	}
	defer stop()
	var r *client.Receipt
	if contractName != "" {
		r, err = c.CallToolAs(cmd.Context(), session, contractName, name, params)
	} else if text {
		r, err = c.CallToolText(cmd.Context(), session, name, params)
	} else {
		r, err = c.CallTool(cmd.Context(), session, name, params)
	}
	if err != nil {
		return err
	}
	if text {
		fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSuffix(r.Text, "\n"))
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", r.JSON)
	}
	if !r.OK() {
		return errNotOK
	}
	return nil
}

// runOnDir runs one tool call on a session staged from dir and applies
// the result back.
func runOnDir(ctx context.Context, dir, preset string, dryRun bool, out, errOut io.Writer, name string, params json.RawMessage) error {
	return onStagedDir(ctx, dir, preset, dryRun, errOut, func(s *vfs.Session, ts *tools.Toolset, _ vfs.BlobStore) bool {
		resp := ts.Call(ctx, s.ID(), name, params)
		fmt.Fprintf(out, "%s\n", resp.JSON())
		return resp.OK()
	})
}

// onStagedDir stages dir into a throwaway session, runs call on it, and —
// when call reports success and dryRun is off — applies the session's
// changes back to dir.
func onStagedDir(ctx context.Context, dir, preset string, dryRun bool, errOut io.Writer, call func(s *vfs.Session, ts *tools.Toolset, blobs vfs.BlobStore) bool) error {
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
	repo, err := snapshot.OpenLocalRepo(ctx, work, snapshot.RepoOptions{})
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
	if !call(s, ts, repo.Blobs()) {
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
		fmt.Fprintf(errOut, "vfsd: not applied: %s: %s\n", textdiff.ShowText(c.HostPath), textdiff.ShowText(c.Conflict))
	}
	if len(ar.Conflicts) > 0 {
		return fmt.Errorf("%d changes were not applied to %s (each with its reason above); fix the host, then run the tool again", len(ar.Conflicts), abs)
	}
	return nil
}

// runContractOnDir is runOnDir for a call of another contract than
// vfsd's: the contract's tool runs on a session staged from dir, its
// result body is printed, and a successful call's changes are applied
// back to dir.
func runContractOnDir(ctx context.Context, dir, preset, contractName string, dryRun bool, out, errOut io.Writer, name string, params json.RawMessage) error {
	k, err := contract.Lookup(contractName)
	if err != nil {
		return usageError{err}
	}
	return onStagedDir(ctx, dir, preset, dryRun, errOut, func(s *vfs.Session, ts *tools.Toolset, blobs vfs.BlobStore) bool {
		res := k.Call(ctx, &contract.Env{SessionID: s.ID(), Session: s, Tools: ts, Policy: ts.Policy(), Blobs: blobs}, name, params)
		fmt.Fprintf(out, "%s\n", res.Body)
		return !res.IsError
	})
}
