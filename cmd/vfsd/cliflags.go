package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// annDeprecated marks a flag kept as a deprecated alias; its value is the
// flag to use instead.
const annDeprecated = "vfsd/deprecated"

// deprecateFlag hides cmd's flag old, an alias kept for scripts written
// before it was renamed to now; using it warns on stderr (warnDeprecated).
func deprecateFlag(cmd *cobra.Command, old, now string) {
	f := cmd.Flags().Lookup(old)
	if f == nil {
		panic("vfsd: no flag --" + old + " to deprecate")
	}
	f.Hidden = true
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[annDeprecated] = []string{now}
}

// warnDeprecated warns about every deprecated alias the command line used.
// The root runs it before every verb.
func warnDeprecated(cmd *cobra.Command, _ []string) error {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if now := f.Annotations[annDeprecated]; len(now) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "vfsd: warning: %s --%s is deprecated and will go: use %s\n", cmd.CommandPath(), f.Name, now[0])
		}
	})
	return nil
}

// completeSessions gives every verb under root shell completion of its
// arguments, from its usage line: a SESSION argument (or a --session
// flag) completes the daemon's session IDs, SNAPSHOT the snapshot IDs,
// DIR directories. Verbs added later are covered as long as their usage
// names their arguments so (log SESSION, session rewind SESSION ...).
func completeSessions(root *cobra.Command, g *globalFlags) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.ValidArgsFunction == nil && c.Runnable() {
			if kinds := argKinds(c.Use); len(kinds) > 0 {
				c.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
					kind := kinds[min(len(args), len(kinds)-1)]
					if len(args) >= len(kinds) && !strings.HasSuffix(kind, "...") {
						return nil, cobra.ShellCompDirectiveNoFileComp
					}
					return completeKind(cmd, g, strings.TrimSuffix(kind, "..."))
				}
			}
		}
		if f := c.Flags().Lookup("session"); f != nil && f.Value.Type() == "string" {
			_ = c.RegisterFlagCompletionFunc("session", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return completeKind(cmd, g, "SESSION")
			})
		}
	}
	walk(root)
}

// argKinds reads the positional arguments of a usage line ("show
// SESSION", "rm SNAPSHOT...", "mount SESSION DIR [--backend B]"): the
// upper-case words before the first option.
func argKinds(use string) []string {
	fields := strings.Fields(use)
	var kinds []string
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "[") || strings.HasPrefix(f, "-") || strings.HasPrefix(f, "(") || strings.HasPrefix(f, "|") {
			break
		}
		if f != strings.ToUpper(f) {
			break
		}
		kinds = append(kinds, f)
	}
	return kinds
}

// completeKind completes one argument: session IDs, snapshot IDs or
// directories; anything else is left to the shell's file completion.
func completeKind(cmd *cobra.Command, g *globalFlags, kind string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch kind {
	case "DIR":
		return nil, cobra.ShellCompDirectiveFilterDirs
	case "SESSION", "SNAPSHOT":
	default:
		return nil, cobra.ShellCompDirectiveDefault
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	probe := &cobra.Command{}
	probe.SetContext(ctx)
	probe.SetErr(os.Stderr)
	c, stop, err := connect(probe, g, nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer stop()
	var out []cobra.Completion
	if kind == "SESSION" {
		list, err := c.Sessions(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		for _, s := range list {
			desc := strings.Join(hostFolders(s.Mounts), ", ")
			if s.Label != "" {
				desc = s.Label + "  " + desc
			}
			out = append(out, cobra.CompletionWithDesc(s.ID, desc))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := c.Snapshots(ctx, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for _, s := range list {
		out = append(out, cobra.CompletionWithDesc(short(s.ID), strings.TrimSpace(s.Session+" "+s.Label)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// absPaths makes host paths absolute, for the daemon.
func absPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}
