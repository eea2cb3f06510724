package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/client"
	"github.com/vfsd/vfsd/internal/textdiff"
)

// Environment variables the client verbs read when the flags are not given.
const (
	envSocket = "VFSD_SOCKET"
	envAddr   = "VFSD_ADDR"
	envToken  = "VFSD_TOKEN"
)

// globalFlags are the root's flags: how to reach the daemon.
type globalFlags struct {
	socket, addr, token string
}

// addTo registers the flags on root, for every verb.
func (g *globalFlags) addTo(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", "", "the daemon's Unix socket (env "+envSocket+"; default $XDG_RUNTIME_DIR/vfsd.sock, else in the data dir)")
	pf.StringVar(&g.addr, "addr", "", "the daemon's TCP address host:port, instead of the socket (env "+envAddr+")")
	pf.StringVar(&g.token, "token", "", "bearer token for --addr: the admin's or a session's (env "+envToken+"; default: the data dir's token file)")
}

// value returns a flag's value, else the environment variable's.
func value(flag, env string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(env)
}

// defaultDataDir is $XDG_STATE_HOME/vfsd, else ~/.local/state/vfsd.
func defaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "vfsd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "vfsd-state")
	}
	return filepath.Join(home, ".local", "state", "vfsd")
}

// defaultSocket is $XDG_RUNTIME_DIR/vfsd.sock, else vfsd.sock in dataDir.
func defaultSocket(dataDir string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "vfsd.sock")
	}
	return filepath.Join(dataDir, "vfsd.sock")
}

// socketPath is the socket the daemon verbs use.
func (g *globalFlags) socketPath() string {
	if s := value(g.socket, envSocket); s != "" {
		return s
	}
	return defaultSocket(defaultDataDir())
}

// client connects to the daemon as the flags say.
func (g *globalFlags) client() (*client.Client, error) {
	if addr := value(g.addr, envAddr); addr != "" {
		tok := value(g.token, envToken)
		if tok == "" {
			if b, err := os.ReadFile(filepath.Join(defaultDataDir(), "token")); err == nil {
				tok = strings.TrimSpace(string(b))
			}
		}
		return client.New(client.Options{Addr: addr, Token: tok})
	}
	return client.New(client.Options{Socket: g.socketPath()})
}

// where says, for messages, where the flags say the daemon is.
func (g *globalFlags) where() string {
	if addr := value(g.addr, envAddr); addr != "" {
		return addr
	}
	return g.socketPath()
}

// remoteCmd returns a verb that talks to the daemon: run gets the client
// and an output helper honouring --json. When no daemon answers (and the
// flags name none), the verb runs one inside the command on the default
// data directory (see connect and hostAccessOf).
func remoteCmd(g *globalFlags, cmd *cobra.Command, run func(cmd *cobra.Command, args []string, c *client.Client, out *output) error) *cobra.Command {
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON instead of text")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, stop, err := connect(cmd, g, args)
		if err != nil {
			return err
		}
		defer stop()
		return run(cmd, args, c, &output{w: cmd.OutOrStdout(), json: asJSON})
	}
	return cmd
}

// output prints a result as JSON (--json) or as text.
type output struct {
	w    io.Writer
	json bool
}

// print prints v as indented JSON with --json, or calls human.
func (o *output) print(v any, human func(w io.Writer)) error {
	if !o.json {
		human(o.w)
		return nil
	}
	enc := json.NewEncoder(o.w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describeSession prints a session's details as text.
func describeSession(w io.Writer, s *api.Session) {
	fmt.Fprintf(w, "session   %s\n", s.ID)
	if s.Label != "" {
		fmt.Fprintf(w, "label     %s\n", textdiff.QuotePath(s.Label))
	}
	fmt.Fprintf(w, "created   %s\n", s.CreatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "expires   %s\n", expires(s))
	fmt.Fprintf(w, "policy    %s\n", s.Policy)
	fmt.Fprintf(w, "profile   %s\n", s.Profile)
	if s.Contract != "" {
		fmt.Fprintf(w, "contract  %s (%d tool calls logged)\n", s.Contract, s.Calls)
	}
	fmt.Fprintf(w, "files     %d (%s)\n", s.Files, sizeText(s.Bytes))
	fmt.Fprintf(w, "changes   %d events, %d paths since the last snapshot\n", s.Seq, s.Dirty)
	if s.Base != "" {
		fmt.Fprintf(w, "base      %s\n", s.Base)
	}
	if s.LastSnapshot != "" {
		fmt.Fprintf(w, "snapshot  %s (last taken or restored)\n", s.LastSnapshot)
	}
	if s.ForkOf != "" {
		fmt.Fprintf(w, "fork of   %s\n", s.ForkOf)
	}
	for _, m := range s.Mounts {
		fmt.Fprintf(w, "folder    %s -> %s\n", m.HostPath, mountPathText(m.MountPath))
	}
	if s.ImportSnapshot != "" {
		fmt.Fprintf(w, "import    %s (apply writes the changes since)\n", s.ImportSnapshot)
	}
	for _, f := range s.FuseMounts {
		fmt.Fprintf(w, "mounted   %s (%s)\n", f.Dir, mountBackendText(f.Backend))
	}
}

func mountPathText(p string) string {
	if p == "" {
		return "(the folder's name)"
	}
	return p
}

func expires(s *api.Session) string {
	if s.ExpiresAt == nil {
		return "never"
	}
	return s.ExpiresAt.Local().Format(time.DateTime) + " (" + untilText(time.Until(*s.ExpiresAt)) + ")"
}

// untilText says how far off a moment d ahead is, as a person says it:
// "in 24 h", "in 35 min", "in 3 days", "in under a minute", or "expired".
func untilText(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d < time.Minute:
		return "in under a minute"
	case d < 90*time.Minute:
		return fmt.Sprintf("in %d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %d h", int(d.Round(time.Hour)/time.Hour))
	}
	return fmt.Sprintf("in %d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
}

// sizeText renders a byte count for people.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// short shortens a snapshot ID for tables.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// readParams reads --params PARAMS: inline JSON, "-" for stdin, "@FILE" for
// a file.
func readParams(arg string, stdin io.Reader) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case arg == "-":
		b, err = io.ReadAll(stdin)
	case strings.HasPrefix(arg, "@"):
		b, err = os.ReadFile(arg[1:])
	default:
		b = []byte(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("read the parameters: %w", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		b = []byte("{}")
	}
	if !json.Valid(b) {
		return nil, usageError{errors.New("--params must be a JSON object (or - for stdin, @FILE for a file)")}
	}
	return b, nil
}

// mountBackendText names a mount's backend as the CLI says it.
func mountBackendText(b string) string {
	if b == "" {
		return "fuse"
	}
	return b
}
