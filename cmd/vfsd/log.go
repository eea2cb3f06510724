package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

func newLogCmd(g *globalFlags) *cobra.Command {
	var patch bool
	return withLogFlags(remoteCmd(g, &cobra.Command{
		Use: "log SESSION [-p] [--json]",
		Example: `  vfsd log review                 # every call and mount change, oldest first
  vfsd log review -p              # with each entry's diff
  vfsd log review --json | jq '.entries[] | select(.is_error)'  # failed calls`,
		Short: "List what happened in a session: every tool call, mount change and session operation",
		Long: `Lists SESSION's history, oldest first: each tool call (its number, tool,
transport, status, summary), each run of changes programs made through a
mount (one entry per run), and session operations (snapshots, restores,
rewinds, rebases), with the paths each changed. Every entry starts with the
journal position just before it (@N): 'vfsd session rewind SESSION --to @N'
puts the session back there. -p adds each entry's diff.

Examples:
  vfsd log 3f2a
  vfsd log 3f2a -p
  vfsd log 3f2a --json | jq '.entries[] | select(.kind == "call")'`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}, func(cmd *cobra.Command, args []string, c *client.Client, out *output) error {
		l, err := c.LogAll(cmd.Context(), args[0], patch)
		if err != nil {
			return err
		}
		return out.print(l, func(w io.Writer) { printLog(w, l) })
	}), &patch)
}

func withLogFlags(cmd *cobra.Command, patch *bool) *cobra.Command {
	cmd.Flags().BoolVarP(patch, "patch", "p", false, "show each entry's diff")
	return cmd
}

// printLog prints a log as text.
func printLog(w io.Writer, l *api.Log) {
	if len(l.Entries) == 0 {
		fmt.Fprintln(w, "nothing happened in this session yet")
		return
	}
	for _, e := range l.Entries {
		what := e.Tool
		switch e.Kind {
		case api.LogCall:
			what = fmt.Sprintf("call %d %s", e.Call, e.Tool)
		case api.LogMount:
			what = "mount"
		case api.LogSession:
			if what == "" {
				what = "session"
			}
		}
		status := e.Status
		if status == "" {
			status = "-"
		}
		fmt.Fprintf(w, "@%-5d %s  %-24s %-8s %-8s %s\n", e.SeqBefore, e.Time.Local().Format(time.DateTime), what, e.Source, status, oneLine(e.Summary, 80))
		for _, p := range e.Paths {
			fmt.Fprintf(w, "        %s\n", textdiff.ShowText(p))
		}
		if e.PathsMore > 0 {
			fmt.Fprintf(w, "        ... and %d more\n", e.PathsMore)
		}
		if e.Diff != "" {
			fmt.Fprintln(w)
			io.WriteString(w, e.Diff)
			if e.DiffTruncated {
				fmt.Fprintln(w, "... (diff cut; see vfsd snapshot diff for the whole)")
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "now at @%d; history kept from @%d\n", l.Seq, l.HistoryStart)
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return textdiff.ShowText(s)
}
