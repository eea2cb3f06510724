// Package volume is what a container platform's volume is in vfsd: a
// session, created from a set of string options (Docker's `-o key=value`,
// a Kubernetes StorageClass's parameters) and mounted where the platform
// asks. It parses and checks those options in one place — every error
// names the option and says what it accepts — and turns them into the
// daemon's requests: Create makes the session (staged from a host folder,
// forked from a session or a snapshot, or empty), MountRequest says how to
// mount it.
//
// It knows nothing of any platform's protocol: package volume/dockerplugin
// serves Docker's and Podman's volume plugin protocol on top of it.
package volume

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/vfs/policy"
)

// The options a volume takes, as they are spelled in `docker volume create
// -o KEY=VALUE`.
const (
	OptFolder          = "folder"
	OptInclude         = "include"
	OptExclude         = "exclude"
	OptGitignore       = "gitignore"
	OptDefaultExcludes = "default-excludes"
	OptFork            = "fork"
	OptBackend         = "backend"
	OptReadOnly        = "readonly"
	OptPolicy          = "policy"
	OptQuota           = "quota"
	OptQuotaFiles      = "quota-files"
	OptUID             = "uid"
	OptGID             = "gid"
	OptTTL             = "ttl"
)

// accepted says, per option, what values it takes: the text of the errors
// and of Help.
var accepted = []struct{ key, what string }{
	{OptFolder, "an absolute host directory beneath one of the daemon's --allow-root directories; its contents become the volume's"},
	{OptInclude, "doublestar globs relative to the folder, comma-separated (braces may hold commas): stage only matching files"},
	{OptExclude, "doublestar globs relative to the folder, comma-separated: skip matching files and folders"},
	{OptGitignore, "true or false (alone: true): honour the folder's .gitignore files"},
	{OptDefaultExcludes, "true or false (alone: true): skip .git, node_modules, build outputs and the like"},
	{OptFork, "a session's ID (forked as it is now) or a snapshot's ID or unique prefix: the volume starts as an O(1) copy of it"},
	{OptBackend, "fuse (the default), overlay or auto"},
	{OptReadOnly, "true or false (alone: true): containers see the volume read-only"},
	{OptPolicy, "a policy preset (" + strings.Join(policy.Presets(), ", ") + ") or a policy object in JSON"},
	{OptQuota, "the most bytes the volume may hold: a number with an optional K, M, G or T (like 16GiB)"},
	{OptQuotaFiles, "the most files, directories and symlinks the volume may hold: a positive number"},
	{OptUID, "a numeric user ID (FUSE only) that stands for the volume's owner: what it owns shows as owned by this user"},
	{OptGID, "a numeric group ID (FUSE only), the group that goes with uid"},
	{OptTTL, `how long the volume lives, like 24h, or "never" (the default)`},
}

// Keys returns the options a volume takes, in the order Help lists them.
func Keys() []string {
	keys := make([]string, len(accepted))
	for i, a := range accepted {
		keys[i] = a.key
	}
	return keys
}

// Help describes every option and what it accepts, one a line.
func Help() string {
	var b strings.Builder
	for _, a := range accepted {
		fmt.Fprintf(&b, "%s: %s\n", a.key, a.what)
	}
	return b.String()
}

// OptionError is an option that is unknown or whose value is refused.
// Callers branch on it (errors.As) to tell a user's mistake from a
// failure of the daemon.
type OptionError struct {
	// Option is the option's key as given.
	Option string
	// Value is the value as given.
	Value string
	// Msg says what is wrong and what is accepted.
	Msg string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %s=%q: %s", e.Option, e.Value, e.Msg)
}

// Options are a volume's options, parsed and checked (Parse).
type Options struct {
	// Folder is the host folder staged into the volume ("" for none); its
	// contents land at the volume's root.
	Folder                     string
	Include, Exclude           []string
	Gitignore, DefaultExcludes bool
	// Fork is the session or snapshot the volume is forked from.
	Fork string
	// Backend is fuse, overlay or auto ("" is fuse).
	Backend  string
	ReadOnly bool
	// Policy is a preset's name; PolicyObject a policy given as JSON.
	Policy       string
	PolicyObject json.RawMessage
	// QuotaBytes and QuotaFiles are 0 where not given (the daemon's
	// defaults apply).
	QuotaBytes, QuotaFiles int64
	// UID and GID map the session's owner in a FUSE mount (0: not asked).
	UID, GID uint32
	// TTL is the session's lifetime: "never" unless given.
	TTL string
}

// Parse reads a volume's options. An unknown key, a bad value or options
// that do not go together are an *OptionError naming the option and what
// it accepts; nothing else is checked here that the daemon checks (that
// the folder lies beneath an allow-root, that the fork exists).
func Parse(opts map[string]string) (*Options, error) {
	o := &Options{TTL: "never"}
	// In a stable order, so that the same mistakes give the same error.
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := o.set(k, opts[k]); err != nil {
			return nil, err
		}
	}
	return o, o.check(opts)
}

// set takes one option.
func (o *Options) set(key, v string) error {
	bad := func(format string, args ...any) error {
		return &OptionError{Option: key, Value: v, Msg: fmt.Sprintf(format, args...)}
	}
	what := whatOf(key)
	if what == "" {
		return &OptionError{Option: key, Value: v, Msg: fmt.Sprintf("vfsd volumes take no such option; they take %s (see docs/volumes.md)", strings.Join(Keys(), ", "))}
	}
	var err error
	switch key {
	case OptFolder:
		if !filepath.IsAbs(v) {
			return bad("want %s", what)
		}
		if slices.Contains(strings.Split(filepath.ToSlash(v), "/"), "..") {
			return bad(`the path must not contain ".."; name the folder directly`)
		}
		o.Folder = filepath.Clean(v)
	case OptInclude, OptExclude:
		globs, err := splitGlobs(v)
		if err != nil {
			return bad("%v; want %s", err, what)
		}
		if key == OptInclude {
			o.Include = globs
		} else {
			o.Exclude = globs
		}
	case OptGitignore:
		o.Gitignore, err = parseBool(v)
	case OptDefaultExcludes:
		o.DefaultExcludes, err = parseBool(v)
	case OptReadOnly:
		o.ReadOnly, err = parseBool(v)
	case OptFork:
		if strings.TrimSpace(v) == "" {
			return bad("want %s", what)
		}
		o.Fork = strings.TrimSpace(v)
	case OptBackend:
		switch v {
		case api.BackendFUSE, api.BackendOverlay, api.BackendAuto:
			o.Backend = v
		default:
			return bad("want %s", what)
		}
	case OptPolicy:
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(t), &obj); err != nil {
				return bad("not a JSON object (%v); want %s", err, what)
			}
			o.PolicyObject = json.RawMessage(t)
		} else if _, err := policy.Preset(t); err != nil || t == "" {
			return bad("want %s", what)
		} else {
			o.Policy = t
		}
	case OptQuota:
		if o.QuotaBytes, err = parseSize(v); err == nil && o.QuotaBytes == 0 {
			err = fmt.Errorf("zero")
		}
	case OptQuotaFiles:
		if o.QuotaFiles, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && o.QuotaFiles <= 0 {
			err = fmt.Errorf("not positive")
		}
	case OptUID, OptGID:
		var n uint64
		if n, err = strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
			if key == OptUID {
				o.UID = uint32(n)
			} else {
				o.GID = uint32(n)
			}
		}
	case OptTTL:
		switch t := strings.TrimSpace(v); t {
		case "never", "0":
			o.TTL = "never"
		default:
			if d, perr := time.ParseDuration(t); perr != nil || d < time.Second {
				err = fmt.Errorf("bad duration")
			} else {
				o.TTL = t
			}
		}
	}
	if err != nil {
		return bad("want %s", what)
	}
	return nil
}

// check refuses options that do not go together.
func (o *Options) check(given map[string]string) error {
	has := func(k string) bool { _, ok := given[k]; return ok }
	if o.Folder != "" && o.Fork != "" {
		return &OptionError{Option: OptFork, Value: o.Fork, Msg: "a volume starts from a host folder or from a fork, not both; drop folder or fork"}
	}
	for _, k := range []string{OptInclude, OptExclude, OptGitignore, OptDefaultExcludes} {
		if has(k) && o.Folder == "" {
			return &OptionError{Option: k, Value: given[k], Msg: "it shapes what is staged from folder; give -o folder=DIR too"}
		}
	}
	if o.Backend == api.BackendOverlay {
		for _, k := range []string{OptUID, OptGID} {
			if has(k) {
				return &OptionError{Option: k, Value: given[k], Msg: "the overlay backend shows owners as stored and maps no uid/gid; drop uid/gid or use backend=fuse"}
			}
		}
	}
	return nil
}

// SessionRequest is the request that creates the volume's session id,
// without its fork (Create resolves that).
func (o *Options) SessionRequest(id string) api.CreateSessionRequest {
	req := api.CreateSessionRequest{ID: id, Policy: o.Policy, PolicyObject: o.PolicyObject, TTL: o.TTL}
	if o.Folder != "" {
		req.Mounts = []api.Mount{{HostPath: o.Folder, MountPath: "/", Include: o.Include, Exclude: o.Exclude,
			Gitignore: o.Gitignore, DefaultExcludes: o.DefaultExcludes}}
	}
	if o.QuotaBytes != 0 || o.QuotaFiles != 0 {
		req.Quota = &api.Quota{MaxBytes: o.QuotaBytes, MaxFiles: o.QuotaFiles}
	}
	return req
}

// MountRequest is the request that mounts the volume at dir. A FUSE mount
// lets every user in (allow_other, with the kernel checking owners and
// modes as on any file system), since containers run as any uid; every
// mount is nosuid and nodev.
func (o *Options) MountRequest(dir string) api.MountRequest {
	return api.MountRequest{Dir: dir, ReadOnly: o.ReadOnly, Backend: o.Backend, UID: o.UID, GID: o.GID,
		AllowOther: o.Backend != api.BackendOverlay}
}

// splitGlobs splits a comma-separated list of globs, leaving commas inside
// braces ({a,b}) alone, and checks each.
func splitGlobs(v string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	add := func(s string) error {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return fmt.Errorf("an empty glob")
		case strings.HasPrefix(s, "/"):
			return fmt.Errorf("glob %q starts with /: globs are relative to the folder", s)
		case !doublestar.ValidatePattern(s):
			return fmt.Errorf("%q is not a valid glob (check brackets, braces and escapes)", s)
		}
		out = append(out, s)
		return nil
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				if err := add(v[start:i]); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if err := add(v[start:]); err != nil {
		return nil, err
	}
	return out, nil
}

// parseBool reads a flag option: "" (the key alone) is true.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "1", "on":
		return true, nil
	case "false", "no", "0", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

// parseSize reads "123", "16G", "16GiB", "512MB" and the like (powers of
// 1024).
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return v * mult, nil
}
