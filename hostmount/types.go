package hostmount

// The declarations every platform shares: what a scan finds and skips, what
// Apply reports, an entry's metadata, the private set and the allowed-root
// lookup. The host access itself is per platform: openat2 and friends on
// Linux (scan.go, apply_linux.go, apply_posix.go, posix.go, private.go,
// resolve.go, import_linux.go), os.Root elsewhere (root*.go, scan_root.go,
// apply_root.go, stat_*.go) — and on Linux too when built with the
// vfsd_osroot tag, so that its tests run there.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vfsd/vfsd/vfs"
)

// entry is one node the scan found and the import will create.
type entry struct {
	path vfs.Path // in the session
	kind vfs.Kind
	meta
	size    int64
	target  string // symlink target
	openRel string // files: real path relative to the root (no symlinks), to open it again
	id      fileID // files: identity when scanned
	// link is the host identity (device, inode) of a non-directory with
	// more than one host link, zero otherwise: names of one mount with the
	// same link are imported as hard links of one node. second marks every
	// name but the first, whose content is not read again.
	link   [2]uint64
	second bool
}

// fileID is what identifies a file's content as of a scan: if none of it
// changed, neither did the content.
type fileID struct {
	dev, ino       uint64
	size           int64
	mtimeNs, ctime int64
}

// Skip is a host entry the import left out, and why — or, when Xattr is
// set, the extended attribute of an entry it left out.
type Skip struct {
	HostPath string `json:"host_path"`
	Reason   string `json:"reason"`
	Xattr    string `json:"xattr,omitempty"`
}

// Why an entry was skipped.
const (
	SkipSpecial     = "special file of an unknown kind"
	SkipSpecialHere = "fifo, socket or device: imported on Linux only"
	SkipDevice      = "device node: imported only when the daemon runs as root"
	SkipXattr       = "extended attribute over the session's limits (64 KiB a value, 256 KiB a node): the entry is imported without it"
	SkipNotUTF8     = "name is not valid UTF-8"
	SkipNotASCII    = "name is not ASCII, which the session's policy requires"
	SkipBadName     = "name cannot be a session path"
	SkipOutside     = "symlink leads outside the allowed root"
	SkipDangling    = "symlink target does not exist"
	SkipLoop        = "symlink loop"
	SkipTargetUTF8  = "symlink target is not valid UTF-8"
	SkipChanged     = "changed during the import"
	SkipUnreadable  = "cannot be read"
	SkipPrivate     = "the daemon's own data (data directory, socket or token file): never staged"
	maxIgnoreFile   = 1 << 20
	dirReadBatch    = 1024
	maxSymlinkDepth = 40
)

// Test hooks: called just before a directory (scan) or a file (import) is
// opened, so tests can swap it for a symlink at the worst moment.
var (
	testHookBeforeOpenDir  func(hostPath string)
	testHookBeforeOpenFile func(hostPath string)
)

// scanner walks one mount.
type scanner struct {
	ctx        context.Context
	root       root
	mp         *mountPlan
	asciiOnly  bool
	private    privateSet
	entries    []entry
	skipped    []Skip
	bytes      int64
	files      int64
	visiting   map[[2]uint64]bool // directories on the current path, when following symlinks
	onPath     []os.FileInfo      // the same for the os.Root layer, compared with os.SameFile
	links      map[[2]uint64]bool // host identities of multiply-linked entries seen
	privileged bool               // the daemon runs as root: devices, trusted.* and security.*
	progress   func(files, bytes int64)
}

func (sc *scanner) skip(hostRel, reason string) {
	sc.skipped = append(sc.skipped, Skip{HostPath: sc.hostPath(hostRel), Reason: reason})
}

// hostPath is the host path of an entry, for reports.
func (sc *scanner) hostPath(rel string) string {
	return hostJoin(sc.mp.hostPath, rel)
}

// hostJoin joins a host path and a slash-separated path relative to it,
// in the host's own separators.
func hostJoin(base, rel string) string {
	if rel == "" || rel == "." {
		return base
	}
	return filepath.Join(base, filepath.FromSlash(rel))
}

func join(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// DryRun checks every change and reports what would happen, writing
	// nothing.
	DryRun bool
	// Snapshot is the snapshot of the session to apply. When empty, a real
	// apply snapshots the session first, and a dry run reads the session
	// as it is.
	Snapshot string
	// KeepSetID writes set-user-ID and set-group-ID bits and file
	// capabilities (security.capability) of regular files as the session
	// has them. Without it a regular file keeps only those the import saw
	// on it, and only while its content is unchanged; the rest are left
	// out and noted (ApplyChange.Note), and the import base records the
	// file as written, so the next apply lists them again. Whoever was
	// root in the session (a vfsd run command, without capabilities) must
	// not leave a root program in the host folder. Directories keep their
	// set-group-ID bit (it only passes the group on).
	KeepSetID bool
}

// ApplyChange is one path Apply wrote, or would write, or refused.
type ApplyChange struct {
	// Path is the session path.
	Path string `json:"path"`
	// HostPath is where it is on the host.
	HostPath string `json:"host_path"`
	// Action is write, mkdir, symlink, mknod (a fifo, socket or
	// device), link (a new hard link to a name already on the host),
	// chmod (only the mode changed), metadata (owner, mode or extended
	// attributes changed, content not), delete or rmdir.
	Action string `json:"action"`
	// Note says how an applied change differs from the session's: a hard
	// link written as a copy (its other name is outside the mounts, on
	// another file system or differs on the host), an owner left as the
	// daemon's (not root).
	Note string `json:"note,omitempty"`
	// Conflict says why the change was not applied: the host changed since
	// the import, the change cannot be expressed safely, or the host
	// refused it (the error says how).
	Conflict string `json:"conflict,omitempty"`
}

// ApplyReport is what Apply did.
type ApplyReport struct {
	DryRun    bool          `json:"dry_run"`
	Applied   []ApplyChange `json:"applied"`
	Conflicts []ApplyChange `json:"conflicts"`
	Outside   []string      `json:"outside,omitempty"` // changed session paths no mount maps to the host
	// Import is the import base after a real apply: the old base with
	// exactly the changes applied (and those outside every mount, which
	// have nothing to apply to) — the session's snapshot itself when
	// everything applied, the old base when nothing did. The next apply
	// compares the host with it, so it neither redoes nor undoes this
	// one. "" for a dry run.
	Import string `json:"import,omitempty"`
}

// meta is what an import keeps of a host entry besides its content: the
// host's owner, all twelve mode bits, its times, a device's number and its
// extended attributes.
type meta struct {
	mode                fs.FileMode // vfs.PermBits
	uid, gid            uint32
	atime, mtime, ctime int64 // Unix ns
	rdev                uint64
	xattrs              vfs.Xattrs
}

// node returns the session node for an entry's metadata: the host's owner,
// mode and times. The change time is the host's, not the import's: an
// import of an unchanged folder is then the same tree, snapshot for
// snapshot (and the engine sets ctime itself from the first change in the
// session on). The birth time is the host's modification time, as before
// owners existed (stat(2) does not give a birth time).
func (m meta) node(kind vfs.Kind) vfs.Node {
	n := vfs.Node{Kind: kind, Mode: m.mode, Uid: m.uid, Gid: m.gid, Version: 1,
		Atime: m.atime, Mtime: m.mtime, Ctime: m.ctime, Btime: m.mtime, Xattrs: m.xattrs}
	if kind == vfs.KindCharDev || kind == vfs.KindBlockDev {
		n.Rdev = m.rdev
	}
	return n
}

// isRoot reports whether the daemon runs as root: it then imports and
// applies trusted.* and security.* attributes, devices and any owner.
var isRoot = os.Geteuid() == 0

// xattrNamespace reports whether an attribute of this name is imported and
// applied: user.* always; trusted.* and security.* (file capabilities,
// SELinux labels) as root only. Others (system.* ACLs) are left alone.
func xattrNamespace(name string, root bool) bool {
	switch {
	case strings.HasPrefix(name, "user."):
		return true
	case strings.HasPrefix(name, "trusted."), strings.HasPrefix(name, "security."):
		return root
	}
	return false
}

// privateSet is what Options.Private names, resolved: the real paths, and
// the identities (device and inode) of what they are, so that a bind mount
// or a hard link of one is recognised too.
type privateSet struct {
	paths []string
	ids   map[[2]uint64]bool
	infos []os.FileInfo // the os.Root layer's identities, compared with os.SameFile
}

// holds reports whether the real path hp is a private path or lies inside
// one.
func (ps privateSet) holds(hp string) bool {
	for _, p := range ps.paths {
		if _, ok := within(p, hp); ok {
			return true
		}
	}
	return false
}

// within returns hp relative to dir when hp is dir or lies beneath it,
// comparing whole path components: /srv/root does not hold /srv/root_evil.
func within(dir, hp string) (string, bool) {
	if hp == dir {
		return ".", true
	}
	prefix := dir
	if sep := string(filepath.Separator); !strings.HasSuffix(prefix, sep) {
		prefix += sep // "/" but on Windows
	}
	if !strings.HasPrefix(hp, prefix) {
		return "", false
	}
	return hp[len(prefix):], true
}

// findRoot returns the allow-listed root holding hp (the deepest, if roots
// nest) and hp relative to it. hp may name the root by its real path or as
// configured; either way the kernel later resolves rel beneath the root's
// own descriptor.
func findRoot(roots []root, hp string) (root, string, error) {
	best, rel, found, depth := root{}, "", false, 0
	for _, r := range roots {
		for _, name := range []string{r.path, r.alias} {
			if name == "" {
				continue
			}
			if x, ok := within(name, hp); ok && (!found || len(name) > depth) {
				best, rel, found, depth = r, x, true, len(name)
			}
		}
	}
	if !found {
		allowed := make([]string, len(roots))
		for i, r := range roots {
			allowed[i] = r.path
		}
		msg := "is outside the allowed roots; the daemon allows none (restart vfsd serve with --allow-root DIR: a daemon flag, read when it starts)"
		if len(allowed) > 0 {
			msg = fmt.Sprintf("is outside the allowed roots %s; stage a folder inside one, or restart vfsd serve with --allow-root DIR (a daemon flag, read when it starts)", strings.Join(allowed, ", "))
		}
		return root{}, "", &vfs.Error{Op: "stage folder", Path: hp, Code: vfs.CodeForbidden, Msg: msg}
	}
	return best, rel, nil
}

// readNames lists a directory, sorted, so imports are deterministic.
func readNames(f *os.File) ([]string, error) {
	var names []string
	for {
		batch, err := f.Readdirnames(dirReadBatch)
		names = append(names, batch...)
		if err == io.EOF || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	return names, nil
}
