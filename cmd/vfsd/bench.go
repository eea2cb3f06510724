package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/internal/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that compare vfsd with the obvious alternative in one run",
	}
	cmd.AddCommand(newBenchCowCmd(), newBenchImportCmd())
	return cmd
}

func newBenchCowCmd() *cobra.Command {
	var (
		files   string
		sizeKB  int
		dir     string
		repeats int
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "cow",
		Short: "Time fork, restore and snapshots at several workspace sizes against cp -a",
		Long: `Builds a workspace of each size, then times, in the same run: fork, restore,
a snapshot after changing 10 files, the first full snapshot, and cp -a of a
materialized copy of the same tree. Prints one JSON object per size.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := parseSizes(files)
			if err != nil {
				return usageError{err}
			}
			if sizeKB <= 0 {
				return usageError{fmt.Errorf("--size-kb must be positive, got %d", sizeKB)}
			}
			opts := bench.CowOptions{Sizes: sizes, SizeKB: sizeKB, Dir: dir, Repeats: repeats, Log: os.Stderr}
			if quiet {
				opts.Log = nil
			}
			return bench.Cow(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&files, "files", "2000,50000", "workspace sizes in files, comma-separated")
	cmd.Flags().IntVar(&sizeKB, "size-kb", 8, "size of each file in KiB")
	cmd.Flags().StringVar(&dir, "dir", "", "directory to build workspaces in (default: the system temp dir)")
	cmd.Flags().IntVar(&repeats, "repeats", 5, "timed repetitions per measurement; the median is reported")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// parseSizes parses "2000,50000".
func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--files wants positive counts separated by commas, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func newBenchImportCmd() *cobra.Command {
	var (
		tree    string
		dir     string
		repeats int
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Time importing a host tree, and importing it again, against cp -a and rsync -a",
		Long: `Imports a host tree (default: the Go distribution's src) into a fresh store,
imports it again unchanged (served by the import cache), and times cp -a and
rsync -a of the same tree, in one run. Prints one JSON object.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := bench.ImportOptions{Tree: tree, Dir: dir, Repeats: repeats, Log: os.Stderr}
			if quiet {
				opts.Log = nil
			}
			return bench.Import(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&tree, "tree", "", "host tree to import (default: the Go distribution's src)")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for stores and copies (default: the system temp dir)")
	cmd.Flags().IntVar(&repeats, "repeats", 3, "repetitions per measurement; the median is reported")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}
