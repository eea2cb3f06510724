package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// versionInfo is what vfsd version prints (--json: as is).
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
	// CommitTime is when Commit was made (from the VCS).
	CommitTime string `json:"commit_time,omitempty"`
	// Built is when this binary was written (its file's modification
	// time: Go records no build time).
	Built string `json:"built,omitempty"`
	Go    string `json:"go"`
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	// Daemon is the daemon the flags name, when one answers.
	Daemon *daemonVersion `json:"daemon,omitempty"`
}

// daemonVersion is the running daemon's version.
type daemonVersion struct {
	Version  string `json:"version"`
	Sessions int    `json:"sessions"`
}

// buildInfo returns this binary's version and, when built from a git
// work tree, its commit.
func buildInfo() versionInfo {
	v := versionInfo{Version: version(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "vcs.time":
				v.CommitTime = s.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			v.Built = fi.ModTime().UTC().Format(time.RFC3339)
		}
	}
	return v
}

func newVersionCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print vfsd's version, and the running daemon's",
		Long: `Prints this binary's version (with the git commit it was built from, when
go build or go install ran in a git work tree), and the version of the daemon
the flags name (--socket, --addr) when one answers; no daemon is started.`,
		Example: `  vfsd version
  vfsd --version          # this binary's version only
  vfsd version --json | jq -r .daemon.version`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildInfo()
			where := ""
			if c, err := g.client(); err == nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
				if h, err := c.Health(ctx); err == nil {
					v.Daemon = &daemonVersion{Version: h.Version, Sessions: h.Sessions}
				}
				cancel()
				c.Close()
				where = g.where()
			}
			return (&output{w: cmd.OutOrStdout(), json: asJSON}).print(v, func(w io.Writer) {
				fmt.Fprintf(w, "vfsd %s", v.Version)
				if v.Commit != "" {
					fmt.Fprintf(w, " (commit %s", short(v.Commit))
					if v.CommitTime != "" {
						fmt.Fprintf(w, " of %s", v.CommitTime)
					}
					if v.Modified {
						fmt.Fprint(w, ", with uncommitted changes")
					}
					fmt.Fprint(w, ")")
				}
				fmt.Fprintf(w, " %s %s/%s\n", v.Go, v.OS, v.Arch)
				if v.Built != "" {
					fmt.Fprintf(w, "built: %s\n", v.Built)
				}
				if v.Daemon != nil {
					fmt.Fprintf(w, "daemon: vfsd %s at %s, %d sessions\n", v.Daemon.Version, where, v.Daemon.Sessions)
				} else {
					fmt.Fprintf(w, "daemon: none answers at %s (the other verbs then run one inside the command)\n", where)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the versions as JSON")
	return cmd
}

// version is the main module's version (a release, or the pseudo-version
// go build stamps from the VCS: v0.0.0-DATE-COMMIT), else "devel" with the
// commit when there is one ("devel-3f2a9c1d4e5b", "+dirty" with
// uncommitted changes), else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	v, dirty := "devel", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += "-" + short(s.Value)
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return v + dirty
}
