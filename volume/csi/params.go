package csi

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/vfsd/vfsd/api"
)

// The parameter keys of a StorageClass (CreateVolume's parameters) and of
// an inline volume's volumeAttributes (NodePublishVolume's volume context).
const (
	// ParamFolders are host folders to stage: "HOST[=PATH]" entries,
	// separated by commas or newlines; PATH, where the folder lands in the
	// volume, is / unless given. Host folders must lie beneath the
	// daemon's --allow-root directories.
	ParamFolders = "folders"
	// ParamInclude and ParamExclude are doublestar globs (comma- or
	// newline-separated; a comma inside {a,b} is the glob's) every folder
	// is staged with.
	ParamInclude = "include"
	ParamExclude = "exclude"
	// ParamGitignore ("true") honours .gitignore files while staging;
	// ParamDefaultExcludes ("true") skips .git, node_modules, build
	// outputs and the like.
	ParamGitignore       = "gitignore"
	ParamDefaultExcludes = "defaultExcludes"
	// ParamPolicy is the session's policy preset (vfsd session create
	// --policy).
	ParamPolicy = "policy"
	// ParamBackend is how the volume is mounted: overlay, fuse or auto
	// (the driver's --backend when absent).
	ParamBackend = "backend"
	// ParamMaxFiles is the session's quota of files, directories and
	// symlinks.
	ParamMaxFiles = "maxFiles"
	// ParamMaxBytes is an inline volume's byte quota (a persistent
	// volume's is its capacity).
	ParamMaxBytes = "maxBytes"
	// ParamSnapshot makes an inline volume an O(1) fork of a snapshot (its
	// full ID); a persistent volume forks through its dataSource instead.
	ParamSnapshot = "snapshot"
)

// k8sPrefix marks the keys Kubernetes adds of its own (the provisioner's
// csi.storage.k8s.io/pvc/name, the kubelet's pod information and
// csi.storage.k8s.io/ephemeral): they are read where they mean something
// and never refused.
const k8sPrefix = "csi.storage.k8s.io/"

// keyEphemeral is what the kubelet sets, with podInfoOnMount, on the
// volume context of a CSI ephemeral inline volume.
const keyEphemeral = k8sPrefix + "ephemeral"

// params is a volume's parameters, parsed.
type params struct {
	Folders  []api.Mount `json:"folders,omitempty"`
	Policy   string      `json:"policy,omitempty"`
	Backend  string      `json:"backend,omitempty"`
	MaxFiles int64       `json:"max_files,omitempty"`
	MaxBytes int64       `json:"max_bytes,omitempty"`
	Snapshot string      `json:"snapshot,omitempty"`
}

// paramSet says which keys a parameter map may hold.
type paramSet int

const (
	forStorageClass paramSet = iota // CreateVolume
	forInline                       // an ephemeral inline volume's attributes
)

// parseParams reads a StorageClass's parameters or an inline volume's
// attributes. An unknown key or a bad value is an error naming it and what
// is accepted.
func parseParams(m map[string]string, set paramSet, defaultBackend string) (params, error) {
	p := params{Backend: defaultBackend}
	accepted := []string{ParamFolders, ParamInclude, ParamExclude, ParamGitignore, ParamDefaultExcludes,
		ParamPolicy, ParamBackend, ParamMaxFiles}
	if set == forInline {
		accepted = append(accepted, ParamMaxBytes, ParamSnapshot)
	}
	var include, exclude []string
	var gitignore, defExcludes bool
	var folders []string
	for k, v := range m {
		if strings.HasPrefix(k, k8sPrefix) {
			continue
		}
		if !slices.Contains(accepted, k) {
			return p, fmt.Errorf("unknown parameter %q: accepted are %s (and Kubernetes' own %s* keys)", k, strings.Join(accepted, ", "), k8sPrefix)
		}
		var err error
		switch k {
		case ParamFolders:
			folders = splitList(v, false)
		case ParamInclude:
			include = splitList(v, true)
		case ParamExclude:
			exclude = splitList(v, true)
		case ParamGitignore:
			gitignore, err = parseBool(k, v)
		case ParamDefaultExcludes:
			defExcludes, err = parseBool(k, v)
		case ParamPolicy:
			p.Policy = strings.TrimSpace(v)
		case ParamBackend:
			p.Backend = strings.TrimSpace(v)
			if !slices.Contains([]string{api.BackendOverlay, api.BackendFUSE, api.BackendAuto}, p.Backend) {
				err = fmt.Errorf("parameter %s=%q: use overlay, fuse or auto", k, v)
			}
		case ParamMaxFiles, ParamMaxBytes:
			var n int64
			n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				err = fmt.Errorf("parameter %s=%q: give a positive whole number", k, v)
			} else if k == ParamMaxFiles {
				p.MaxFiles = n
			} else {
				p.MaxBytes = n
			}
		case ParamSnapshot:
			p.Snapshot = strings.TrimSpace(v)
			if !fullSnapshotID(p.Snapshot) {
				err = fmt.Errorf("parameter %s=%q: give a snapshot's full ID (64 hex digits; vfsd snapshot list shows them)", k, v)
			}
		}
		if err != nil {
			return p, err
		}
	}
	if len(folders) == 0 && (len(include) > 0 || len(exclude) > 0 || gitignore || defExcludes) {
		return p, fmt.Errorf("parameters %s, %s, %s and %s shape the staging of %s: give %s too", ParamInclude, ParamExclude, ParamGitignore, ParamDefaultExcludes, ParamFolders, ParamFolders)
	}
	if len(folders) > 0 && p.Snapshot != "" {
		return p, fmt.Errorf("give %s or %s, not both: a volume starts from host folders or a snapshot", ParamFolders, ParamSnapshot)
	}
	for _, f := range folders {
		host, at, _ := strings.Cut(f, "=")
		host = strings.TrimSpace(host)
		if !path.IsAbs(host) {
			return p, fmt.Errorf("parameter %s: %q is not an absolute host path; give HOST[=PATH] entries like /src/app=/", ParamFolders, host)
		}
		at = strings.TrimSpace(at)
		if at == "" {
			at = "/"
		}
		p.Folders = append(p.Folders, api.Mount{HostPath: path.Clean(host), MountPath: at,
			Include: include, Exclude: exclude, Gitignore: gitignore, DefaultExcludes: defExcludes})
	}
	return p, nil
}

// splitList splits a parameter list at newlines, or (when it has none) at
// commas — for globs, at commas outside braces. Blank entries are dropped.
func splitList(v string, glob bool) []string {
	var parts []string
	if strings.Contains(v, "\n") {
		parts = strings.Split(v, "\n")
	} else {
		depth, start := 0, 0
		for i, c := range v {
			switch {
			case c == '{' && glob:
				depth++
			case c == '}' && glob && depth > 0:
				depth--
			case c == ',' && depth == 0:
				parts = append(parts, v[start:i])
				start = i + 1
			}
		}
		parts = append(parts, v[start:])
	}
	out := parts[:0]
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseBool(k, v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("parameter %s=%q: use true or false", k, v)
	}
	return b, nil
}

// fullSnapshotID reports whether s is a whole snapshot ID: the daemon
// resolves unique prefixes too, which a volume must never do (a short
// prefix could name another snapshot than meant).
func fullSnapshotID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
