package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/cmd/vfsd/internal/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that compare vfsd with the obvious alternative in one run",
		Example: `  vfsd bench cow
  vfsd bench import --tree ~/src/linux
  vfsd bench mount --targets native,vfsd,vfsd_overlay --steps untar,grep
  vfsd bench remote --files 50000
  sudo vfsd bench volumes --docker-host unix:///run/docker.sock`,
	}
	cmd.AddCommand(newBenchCowCmd(), newBenchImportCmd(), newBenchToolsCmd(), newBenchMountCmd(), newBenchRemoteCmd(), newBenchReopenReadCmd(), newBenchRoundTripCmd(), newBenchVolumesCmd())
	return cmd
}

// newBenchReopenReadCmd is the fresh process bench cow runs to time
// reopening a repository and reading one file (reopen_read_ms).
func newBenchReopenReadCmd() *cobra.Command {
	var store, sessions, session, path string
	cmd := &cobra.Command{
		Use:    "reopen-read",
		Short:  "Open a repository and read one file of a session, timed (run by vfsd bench cow)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range []struct{ name, v string }{{"--store", store}, {"--sessions", sessions}, {"--session", session}, {"--path", path}} {
				if f.v == "" {
					return usageError{fmt.Errorf("%s is required", f.name)}
				}
			}
			res, err := bench.ReopenRead(cmd.Context(), store, sessions, session, path)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "the local store's directory")
	cmd.Flags().StringVar(&sessions, "sessions", "", "the sessions' directory")
	cmd.Flags().StringVar(&session, "session", "", "the session to read from")
	cmd.Flags().StringVar(&path, "path", "", "the file to read")
	return cmd
}

// newBenchRoundTripCmd is the fresh process bench mount's round_trip step
// runs: a client of the mount that is not the process serving it.
func newBenchRoundTripCmd() *cobra.Command {
	var (
		path string
		n    int
	)
	cmd := &cobra.Command{
		Use:    "round-trip",
		Short:  "Ask a file for a missing xattr N times (run by vfsd bench mount --steps round_trip)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" || n <= 0 {
				return usageError{fmt.Errorf("--path and a positive --n are required")}
			}
			return bench.RoundTrip(path, n)
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "the file to ask")
	cmd.Flags().IntVar(&n, "n", 0, "how many times")
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
		Example: `  vfsd bench cow
  vfsd bench cow --files 2000,50000 --repeats 9`,
		Long: `Builds a workspace of each size, then times, in the same run: fork, restore,
a snapshot after changing 10 files, the first full snapshots (files written
through handles, by tools, and through a kernel overlay mount where the
overlay backend works), cp -a of a materialized copy of the same tree (those
four interleaved, --repeats rounds), and a fresh process opening the closed
repository and reading one file of a session forked from the workspace
(reopen_read_ms), also with 100 more sessions in the repository
(reopen_read_100_sessions_ms). Prints one JSON object per size.`,
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
			if self, err := os.Executable(); err == nil {
				opts.Self = self
			} else {
				fmt.Fprintf(os.Stderr, "reopen figures left out: cannot find this binary to run it again: %v\n", err)
			}
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
		Use:     "import",
		Short:   "Time importing a host tree, and importing it again, against cp -a and rsync -a",
		Example: `  vfsd bench import --tree ~/src/app --repeats 5`,
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

func newBenchToolsCmd() *cobra.Command {
	var (
		opts  bench.ToolsOptions
		quiet bool
	)
	cmd := &cobra.Command{
		Use:     "tools",
		Short:   "Time grep, glob, read_file and edit_file on an imported tree against rg and plain reads",
		Example: `  vfsd bench tools --tree ~/src/app --pattern 'TODO|FIXME'`,
		Long: `Imports a host tree (default: the Go distribution's src) into a session and
times, in one run: grep through the tool (ripgrep and native engines) against
rg on the plain tree, glob **/*.go against rg --files -g '*.go', read_file of
every file against os.ReadFile of every file, and a run of durable edit_file
calls. Prints one JSON object.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Log = os.Stderr
			if quiet {
				opts.Log = nil
			}
			return bench.Tools(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.Tree, "tree", "", "host tree to import (default: the Go distribution's src)")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the store (default: the system temp dir)")
	cmd.Flags().IntVar(&opts.Repeats, "repeats", 5, "repetitions per measurement; the median is reported")
	cmd.Flags().IntVar(&opts.Edits, "edits", 1000, "edit_file calls to time")
	cmd.Flags().StringVar(&opts.Pattern, "pattern", `func \w+Handler`, "grep pattern")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

func newBenchMountCmd() *cobra.Command {
	var (
		opts     bench.MountOptions
		quiet    bool
		variants []string
	)
	cmd := &cobra.Command{
		Use:   "mount",
		Short: "Time a file workload on a vfsd FUSE mount against a plain directory, go-fuse's loopback and fuse-overlayfs",
		Example: `  vfsd bench mount
  vfsd bench mount --targets native,vfsd,vfsd_overlay --steps untar,grep`,
		Long: `Runs the same workload, in one run, on a plain directory, on an empty vfsd
session mounted through FUSE, on go-fuse's loopback of a plain directory and
on fuse-overlayfs (when installed): extract a tarball of a source tree
(default: the Go distribution's src), walk and lstat it, rg it, read every
file, create small files, write a large file and fsync it, read it back
cold, sed -i a subtree, rm -rf the tree. Each step is timed on its own,
starting on a flushed filesystem; on ext4 without a journal, where creates
right after deletions are slow for a minute, each round first waits that
minute out. Prints one JSON object per step, then a summary. Needs root or
fusermount3, /dev/fuse, tar and rg; the run takes a few minutes.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range []struct {
				name string
				v    int
			}{{"--repeats", opts.Repeats}, {"--write-mb", opts.WriteMB}, {"--creates", opts.Creates}} {
				if f.v <= 0 {
					return usageError{fmt.Errorf("%s must be positive, got %d", f.name, f.v)}
				}
			}
			for _, spec := range variants {
				v, err := bench.ParseVariant(spec)
				if err != nil {
					return usageError{fmt.Errorf("--ab %s: %w", spec, err)}
				}
				opts.Variants = append(opts.Variants, v)
			}
			opts.Log = os.Stderr
			if quiet {
				opts.Log = nil
			}
			return bench.Mount(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.Tree, "tree", "", "source tree to extract (default: the Go distribution's src)")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the tarball and the targets (default: the system temp dir)")
	cmd.Flags().IntVar(&opts.Repeats, "repeats", 1, "rounds of the whole workload; the median is reported")
	cmd.Flags().IntVar(&opts.WriteMB, "write-mb", 512, "size of the sequentially written and read file, in MiB")
	cmd.Flags().IntVar(&opts.Creates, "creates", 3000, "small files to create")
	cmd.Flags().StringSliceVar(&opts.Targets, "targets", nil, "targets to run (default: all that can run here): native, vfsd, vfsd_overlay, loopback, loopback_nopt, overlayfs, kernel_overlayfs")
	cmd.Flags().StringSliceVar(&opts.Steps, "steps", nil, "steps to run (default: all)")
	cmd.Flags().IntVar(&opts.GoPackages, "go-packages", 40, "packages of the container steps' Go module (about 1,100 lines each)")
	cmd.Flags().IntVar(&opts.NpmPackages, "npm-packages", 1000, "packages of the container steps' node_modules (ten files each)")
	cmd.Flags().StringArrayVar(&variants, "ab", nil, "add vfsd's FUSE mount with levers on as target vfsd_NAME: NAME=lever,lever, levers: "+bench.MountLeverNames()+" (the no- ones, splice and full-readdirplus change what the mount does by default); repeatable")
	cmd.Flags().StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of each step on vfsd and loopback to PREFIX-<target>-<step>.pprof")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	cmd.Flags().DurationVar(&opts.Settle, "settle", 0, "how long each round waits before its first step (default: a minute on ext4 without a journal, else none; negative: none)")
	_ = cmd.Flags().MarkHidden("settle")
	return cmd
}

func newBenchRemoteCmd() *cobra.Command {
	var (
		opts  bench.RemoteOptions
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "Time a push to S3, a remote fork and its lazy read against copying the tree with a plain S3 client",
		Example: `  vfsd bench remote
  vfsd bench remote --files 2000 --repeats 5
  vfsd bench remote --remote 's3://bucket/bench?endpoint=host:9000&insecure=1'`,
		Long: `Writes a workspace of small text files (100 per directory), then, in each
round, on a fresh prefix of the bucket: daemon A imports it, snapshots it and
pushes the snapshot (push_s); the same tree is copied to the bucket file by
file with minio-go PutObject at the push's parallelism (baseline_copy_s);
daemon B, with an empty data directory, forks the snapshot by id and calls
read_file once (fork_first_call_ms), then reads every file through
read_file (lazy_read_s) and again, all local by then (lazy_read_local_s:
what the tool calls cost); daemon C, empty too, forks the snapshot and its
background prefetch fetches every blob (prefetch_s: the data plane without
tool calls); daemon D, empty too, forks it and mounts the fork with FUSE,
and a child process cats every file (lazy_read_fuse_s; skipped where FUSE
cannot mount); A changes 10 files, snapshots and pushes (snap10_*: what that
push uploaded). The daemons run in this process and are called over their
sockets. Without --remote it starts versitygw on
loopback (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0);
with --remote, credentials come from AWS_* or ~/.aws/credentials and each
round's objects are removed afterwards. Prints one JSON object of medians.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range []struct {
				name string
				v    int
			}{{"--files", opts.Files}, {"--repeats", opts.Repeats}, {"--parallel", opts.Parallel}} {
				if f.v <= 0 {
					return usageError{fmt.Errorf("%s must be positive, got %d", f.name, f.v)}
				}
			}
			opts.Log = os.Stderr
			if quiet {
				opts.Log = nil
			}
			return bench.Remote(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&opts.Files, "files", 50000, "files in the workspace")
	cmd.Flags().StringVar(&opts.Remote, "remote", "", "s3:// URL to run against, each round under a fresh prefix (default: start versitygw on loopback)")
	cmd.Flags().IntVar(&opts.Repeats, "repeats", 3, "rounds, each on a fresh prefix; the median is reported")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory for the workspace, the daemons and the server (default: the system temp dir)")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 16, "uploads at once for the baseline (the push uses the daemon's 16), read_file calls in flight for the lazy read")
	cmd.Flags().StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of the first round's fork and first tool call to this file")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// newBenchVolumesCmd times volumes as container platforms get them — the
// Docker volume plugin's path and the CSI driver's — against copying the
// tree into each (docs/volumes.md).
func newBenchVolumesCmd() *cobra.Command {
	var (
		docker   bench.DockerVolumesOptions
		csiOpts  bench.VolumesCSIOptions
		paths    []string
		sizes    []int
		backends []string
		volumes  int
		rounds   int
		dir      string
		dockerH  string
		quiet    bool
		noCopies bool
	)
	cmd := &cobra.Command{
		Use:   "volumes",
		Short: "Time volumes forked from one snapshot and mounted for containers, against cp -a of the tree into each",
		Example: `  sudo vfsd bench volumes
  sudo vfsd bench volumes --paths csi --files 2000 --backends fuse --rounds 5
  sudo vfsd bench volumes --paths docker --docker-host unix:///run/docker.sock   # baseline: docker volume create + cp -a`,
		Long: `For each workspace size (--files, small text files, 100 per directory) and
mount backend, times making --volumes volumes from one snapshot and mounting
them, in --rounds interleaved rounds (medians reported, with the ratio to the
baseline), by each path in --paths:

  docker: the Docker volume plugin (in this process, on its own socket, as
    dockerd would call it): /VolumeDriver.Create with -o fork=SNAPSHOT and
    -o backend=B, /VolumeDriver.Mount, then a read of one file in the
    mount; baseline: docker volume create (local driver, with
    --docker-host) and cp -a of the tree into its directory, or cp -a into
    a fresh directory alone.
  csi: the CSI driver over its Unix socket: volumes created from the
    snapshot and published at pods' target paths (forks_ready_ms,
    fork_ready_ms each) against cp -a as many times (copies_ms); a fresh
    fork published and a bubblewrap container reading a file from it
    (publish_to_read_ms) against the same container on a plain directory
    and cp -a then the container; with the overlay backend, the metadata
    layer built from nothing (meta_cold_ms) and a fork not built ahead
    (fork_ready_cold_ms).

Prints one JSON object of medians per path, size and backend. Needs root,
/dev/fuse (overlay: Linux 6.5+) and, for csi, bubblewrap.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if volumes <= 0 || rounds <= 0 {
				return usageError{fmt.Errorf("--volumes and --rounds must be positive")}
			}
			for _, n := range sizes {
				if n <= 0 {
					return usageError{fmt.Errorf("--files must be positive sizes, got %d", n)}
				}
			}
			for _, b := range backends {
				if b != "fuse" && b != "overlay" {
					return usageError{fmt.Errorf("--backends %q: use fuse and overlay", b)}
				}
			}
			var log io.Writer = os.Stderr
			if quiet {
				log = nil
			}
			docker.Sizes, docker.Backends, docker.Volumes, docker.Rounds, docker.Dir, docker.DockerHost = sizes, backends, volumes, rounds, dir, dockerH
			if len(docker.Backends) == 0 {
				docker.Backends = []string{"fuse", "overlay"}
			}
			docker.Log = log
			csiOpts.Sizes, csiOpts.Backends, csiOpts.Forks, csiOpts.Repeats, csiOpts.Dir = sizes, backends, volumes, rounds, dir
			csiOpts.NoCopies = noCopies
			if !quiet {
				csiOpts.Log = os.Stderr
			}
			for _, p := range paths {
				var err error
				switch p {
				case "docker":
					err = bench.DockerVolumes(cmd.Context(), docker, cmd.OutOrStdout())
				case "csi":
					err = bench.VolumesCSI(cmd.Context(), csiOpts, cmd.OutOrStdout())
				default:
					return usageError{fmt.Errorf("--paths %q: use docker, csi or both", p)}
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&paths, "paths", []string{"docker", "csi"}, "the volume paths to time: docker, csi")
	f.IntSliceVar(&sizes, "files", []int{2000, 50000}, "workspace sizes, in files")
	f.IntVar(&volumes, "volumes", 10, "volumes forked from one snapshot per round")
	f.IntVar(&rounds, "rounds", 3, "interleaved rounds; medians are reported")
	f.StringSliceVar(&backends, "backends", nil, "mount backends: fuse, overlay (default: both, overlay where it can mount)")
	f.StringVar(&dir, "dir", "", "where to work (default: the system temp dir)")
	f.StringVar(&dockerH, "docker-host", os.Getenv("DOCKER_HOST"), "docker path: a dockerd for the baseline's docker volume create (default $DOCKER_HOST; none: cp -a alone)")
	f.BoolVar(&noCopies, "no-copies", false, "csi path: skip the cp -a baseline (minutes a round at 50,000 files on a busy disk)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}
