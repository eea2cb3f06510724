package x07

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/vfs"
)

const capsSchema = `"caps":{"type":"string","description":"FsCapsV1 (24 bytes: six u32_le fields version=1, max_read_bytes, max_write_bytes, max_entries, max_depth, flags), base64. Omitted: caps_default_v1 (16 MiB, 16 MiB, 10000 entries, depth 64, flags CREATE_PARENTS|OVERWRITE|ATOMIC_WRITE)."}`

func pathSchema(name, what string) string {
	return fmt.Sprintf(`%q:{"type":"string","description":%q}`, name, what+": UTF-8, '/'-separated, relative (no leading '/', no empty segment, no '..'; '.' segments are ignored)")
}

func objSchema(required []string, props ...string) string {
	req, _ := json.Marshal(required)
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":` + string(req) + `,"additionalProperties":false}`
}

var (
	readOnly    = contract.Annotations{ReadOnly: true, Idempotent: true}
	operations  map[string]*operation
	toolOrder   = []string{opReadAll, opWriteAll, opMkdirs, opRemoveFile, opRemoveDirAll, opRename, opListDir, opWalkGlob, opStat, opCapsDefault, opCapsPack}
	u32Property = func(name, what string) string {
		return fmt.Sprintf(`%q:{"type":"integer","minimum":0,"maximum":4294967295,"description":%q}`, name, what)
	}
)

func init() {
	operations = map[string]*operation{
		opReadAll: {title: "Read a file", desc: "std.os.fs.read_all_v1(path, caps) -> result_bytes: the whole file, base64 in bytes_b64 (text too when it is UTF-8). FS_ERR_TOO_LARGE over the effective max_read_bytes; FS_ERR_IS_DIR for a directory.",
			schema: objSchema([]string{"path"}, pathSchema("path", "file to read"), capsSchema), ann: readOnly,
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: readAll},
		opWriteAll: {title: "Write a file", desc: "std.os.fs.write_all_v1(path, data, caps) -> result_i32: write data (base64) as the file's whole content; value is the number of bytes written. Caps flags: CREATE_PARENTS creates missing parents, OVERWRITE replaces an existing file (else FS_ERR_ALREADY_EXISTS), ATOMIC_WRITE (every write is atomic here).",
			schema: objSchema([]string{"path", "data"}, pathSchema("path", "file to write"), `"data":{"type":"string","description":"the bytes to write, base64"}`, capsSchema),
			ann:    contract.Annotations{Destructive: true, Idempotent: true}, params: []string{"path", "data", "caps"}, pathParams: []string{"path"}, run: writeAll},
		opMkdirs: {title: "Make directories", desc: "std.os.fs.mkdirs_v1(path, caps) -> result_i32: make the directory (value 1); an existing directory is fine. Missing parents are made when caps have CREATE_PARENTS (the default caps do).",
			schema: objSchema([]string{"path"}, pathSchema("path", "directory to make"), capsSchema), ann: contract.Annotations{Idempotent: true},
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: mkdirs},
		opRemoveFile: {title: "Remove a file", desc: "std.os.fs.remove_file_v1(path, caps) -> result_i32: remove a file or symlink (value 1). FS_ERR_IS_DIR for a directory: use remove_dir_all_v1.",
			schema: objSchema([]string{"path"}, pathSchema("path", "file to remove"), capsSchema), ann: contract.Annotations{Destructive: true, Idempotent: true},
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: removeFile},
		opRemoveDirAll: {title: "Remove a directory tree", desc: "std.os.fs.remove_dir_all_v1(path, caps) -> result_i32: remove a directory and everything in it (value 1). FS_ERR_NOT_DIR for a file.",
			schema: objSchema([]string{"path"}, pathSchema("path", "directory to remove"), capsSchema), ann: contract.Annotations{Destructive: true, Idempotent: true},
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: removeDirAll},
		opRename: {title: "Rename", desc: "std.os.fs.rename_v1(src, dst, caps) -> result_i32: move src to dst (value 1), replacing a file or empty directory at dst as rename(2) does; dst's parent must exist.",
			schema: objSchema([]string{"src", "dst"}, pathSchema("src", "path to move"), pathSchema("dst", "new path"), capsSchema), ann: contract.Annotations{Destructive: true},
			params: []string{"src", "dst", "caps"}, pathParams: []string{"src", "dst"}, run: rename},
		opListDir: {title: "List a directory", desc: "std.os.fs.list_dir_sorted_text_v1(path, caps) -> result_bytes: the entry names (not paths), sorted ascending by bytes, one per line, each ending in \\n; an empty directory gives \"\\n\". FS_ERR_TOO_MANY_ENTRIES over the effective max_entries.",
			schema: objSchema([]string{"path"}, pathSchema("path", "directory to list; \".\" is the session root"), capsSchema), ann: readOnly,
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: listDir},
		opWalkGlob: {title: "Walk with a glob", desc: "std.os.fs.walk_glob_sorted_text_v1(root, glob, caps) -> result_bytes: the paths of the non-directory entries under root, relative to root with '/', that match glob ('*' and '?' also match '/', '**/' any directories, {a,b}, [..]), sorted ascending, one per line ending in \\n; none gives \"\\n\". FS_ERR_DEPTH_EXCEEDED when an entry lies deeper than max_depth; FS_ERR_TOO_MANY_ENTRIES over max_entries.",
			schema: objSchema([]string{"root", "glob"}, pathSchema("root", "directory to walk; \".\" is the session root"), `"glob":{"type":"string","description":"pattern matched against each path relative to root, e.g. \"**/*.txt\""}`, capsSchema),
			ann:    readOnly, params: []string{"root", "glob", "caps"}, pathParams: []string{"root"}, run: walkGlob},
		opStat: {title: "Stat a path", desc: "std.os.fs.stat_v1(path, caps) -> result_bytes: FsStatV1 (16 bytes: u32_le version=1, kind 0 missing/1 file/2 dir/3 symlink/4 other, size_bytes_u32 (0 for non-files), mtime_unix_s_u32), base64 in bytes_b64 and decoded in stat. A missing path is kind 0, not an error; a symlink is described itself.",
			schema: objSchema([]string{"path"}, pathSchema("path", "path to describe"), capsSchema), ann: readOnly,
			params: []string{"path", "caps"}, pathParams: []string{"path"}, run: stat},
		opCapsDefault: {title: "Default caps", desc: "std.os.fs.spec.caps_default_v1() -> bytes: the default FsCapsV1 (16 MiB reads and writes, 10000 entries, depth 64, flags 28 = CREATE_PARENTS|OVERWRITE|ATOMIC_WRITE), base64 in bytes_b64 and decoded in caps.",
			schema: objSchema([]string{}), ann: readOnly, pure: capsDefault},
		opCapsPack: {title: "Pack caps", desc: "std.os.fs.spec.caps_pack_v1(max_read_bytes, max_write_bytes, max_entries, max_depth, flags) -> bytes: an FsCapsV1, base64 in bytes_b64 (pass it as caps). A zero max means policy/default. Flags: 1 ALLOW_SYMLINKS, 2 ALLOW_HIDDEN, 4 CREATE_PARENTS, 8 OVERWRITE, 16 ATOMIC_WRITE.",
			schema: objSchema([]string{}, u32Property("max_read_bytes", "0: policy/default"), u32Property("max_write_bytes", "0: policy/default"),
				u32Property("max_entries", "for list/walk; 0: policy/default"), u32Property("max_depth", "for walk; 0: policy/default"), u32Property("flags", "bitset: 1 ALLOW_SYMLINKS, 2 ALLOW_HIDDEN, 4 CREATE_PARENTS, 8 OVERWRITE, 16 ATOMIC_WRITE")),
			ann: readOnly, pure: capsPack},
	}
}

func toolNames() []string { return slices.Clone(toolOrder) }

// Tools lists the nine operations, then the two caps builders.
func (*X07) Tools() []contract.Tool {
	out := make([]contract.Tool, 0, len(toolOrder))
	for _, n := range toolOrder {
		op := operations[n]
		out = append(out, contract.Tool{Name: n, Title: op.title, Description: op.desc, InputSchema: json.RawMessage(op.schema), Annotations: op.ann})
	}
	return out
}

// Prompt is the contract's instructions for a model.
func (*X07) Prompt() string {
	var b strings.Builder
	b.WriteString(`## Files (X07 ext-fs v1)

The workspace is a filesystem reached through the std.os.fs operations: read_all_v1, write_all_v1, mkdirs_v1, remove_file_v1, remove_dir_all_v1, rename_v1, list_dir_sorted_text_v1, walk_glob_sorted_text_v1 and stat_v1.

- Paths are UTF-8, relative, '/'-separated: no leading '/', no empty segment, no "..". "." is the workspace root. Hidden paths (a segment starting with '.') and symlinks may be denied by the policy.
- Bytes are base64: data for write_all_v1, bytes_b64 in results. caps is an FsCapsV1 in base64; omit it for caps_default_v1, or build one with caps_pack_v1.
- Start with list_dir_sorted_text_v1 of "." or walk_glob_sorted_text_v1 of "." with "**/*"; lists are sorted, one entry per line, each ending in "\n" ("\n" alone: nothing).
- A success is {"ok":true,...}; a failure is {"ok":false,"code":...,"name":...,"message":...} with these codes:
`)
	for _, c := range Codes() {
		fmt.Fprintf(&b, "  %d %s\n", int(c), c.Name())
	}
	return b.String()
}

func readAll(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessRead, true)
	if err != nil {
		return contract.Result{}, err
	}
	n, err := c.s.Stat(c.ctx, q)
	if err != nil {
		return contract.Result{}, err
	}
	switch {
	case n.IsDir():
		return contract.Result{}, errf(ErrIsDir, "%s is a directory; list it with list_dir_sorted_text_v1", q.Rel())
	case !n.IsFile():
		return contract.Result{}, errf(ErrUnsupported, "%s is a %s; only regular files can be read", q.Rel(), n.Kind)
	case n.Mode&0o400 == 0:
		return contract.Result{}, errf(ErrPermission, "%s is not readable by its owner (mode %04o)", q.Rel(), uint32(n.Mode.Perm()))
	}
	max := limit(c.pol.Caps.MaxReadBytes, defaultMaxRead, c.caps.MaxReadBytes)
	if n.Size > max {
		return contract.Result{}, errf(ErrTooLarge, "%s is %d bytes; the effective max_read_bytes is %d (the smaller of the policy's and the caps')", q.Rel(), n.Size, max)
	}
	data, _, err := c.s.ReadFile(c.ctx, q)
	if err != nil {
		return contract.Result{}, err
	}
	if int64(len(data)) > max {
		return contract.Result{}, errf(ErrTooLarge, "%s is %d bytes; the effective max_read_bytes is %d", q.Rel(), len(data), max)
	}
	text := fmt.Sprintf("%s: %d bytes, binary (see bytes_b64)", q.Rel(), len(data))
	if utf8.Valid(data) {
		text = string(data)
	}
	return bytesResult(data, text), nil
}

func writeAll(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	data, err := decodeB64(p["data"])
	if err != nil {
		return contract.Result{}, errf(ErrUnsupported, "data must be the bytes to write in base64: %v", err)
	}
	if c.caps.Has(FlagCreateParents) && !c.allows(opMkdirs) {
		return contract.Result{}, errf(ErrPolicyDeny, "caps ask for CREATE_PARENTS but the %s policy does not allow mkdir (fs.allow_mkdir); clear the flag", c.pol.Name)
	}
	if c.caps.Has(FlagAtomicWrite) && !c.allows(opRename) {
		return contract.Result{}, errf(ErrPolicyDeny, "caps ask for ATOMIC_WRITE (temp + rename) but the %s policy does not allow rename (fs.allow_rename); clear the flag", c.pol.Name)
	}
	q, err := c.path(p, "path", vfs.AccessWrite, true)
	if err != nil {
		return contract.Result{}, err
	}
	max := limit(c.pol.Caps.MaxWriteBytes, defaultMaxWrite, c.caps.MaxWriteBytes)
	if int64(len(data)) > max {
		return contract.Result{}, errf(ErrTooLarge, "data is %d bytes; the effective max_write_bytes is %d (the smaller of the policy's and the caps')", len(data), max)
	}
	if q.IsRoot() {
		return contract.Result{}, errf(ErrIsDir, ". is the session root, a directory; write to a file path")
	}
	mode := vfs.WriteCreateNew
	n, ok, err := c.s.Tree().Lookup(q)
	if err != nil {
		return contract.Result{}, err
	}
	if ok {
		switch {
		case n.IsDir():
			return contract.Result{}, errf(ErrIsDir, "%s is a directory; write to a file path", q.Rel())
		case !c.caps.Has(FlagOverwrite):
			return contract.Result{}, errf(ErrAlreadyExists, "%s exists; set OVERWRITE (bit 3) in caps to replace it", q.Rel())
		case !n.IsFile():
			return contract.Result{}, errf(ErrUnsupported, "%s is a %s; only regular files can be written", q.Rel(), n.Kind)
		case n.Mode&0o200 == 0:
			return contract.Result{}, errf(ErrPermission, "%s is not writable by its owner (mode %04o)", q.Rel(), uint32(n.Mode.Perm()))
		}
	}
	if c.caps.Has(FlagOverwrite) {
		mode = vfs.WriteCreate
	}
	if _, err := c.s.WriteFile(c.ctx, q, bytes.NewReader(data), vfs.WriteOptions{Mode: mode, CreateParents: c.caps.Has(FlagCreateParents)}); err != nil {
		if vfs.CodeOf(err) == vfs.CodeNotFound && !c.caps.Has(FlagCreateParents) {
			return contract.Result{}, errf(ErrNotFound, "the parent of %s does not exist; set CREATE_PARENTS (bit 2) in caps or make it with mkdirs_v1", q.Rel())
		}
		return contract.Result{}, err
	}
	return i32Result(int32(uint32(len(data))), fmt.Sprintf("wrote %d bytes to %s", len(data), q.Rel())), nil
}

func mkdirs(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessWrite, true)
	if err != nil {
		return contract.Result{}, err
	}
	n, ok, err := c.s.Tree().Lookup(q)
	if err != nil {
		return contract.Result{}, err
	}
	if ok || q.IsRoot() {
		if q.IsRoot() || n.IsDir() {
			return i32Result(1, q.Rel()+" exists"), nil
		}
		return contract.Result{}, errf(ErrAlreadyExists, "%s exists and is a %s, not a directory", q.Rel(), n.Kind)
	}
	parents := c.caps.Has(FlagCreateParents)
	if _, err := c.s.Mkdir(c.ctx, q, vfs.MkdirOptions{Parents: parents}); err != nil {
		if vfs.CodeOf(err) == vfs.CodeNotFound && !parents {
			return contract.Result{}, errf(ErrNotFound, "the parent of %s does not exist; set CREATE_PARENTS (bit 2) in caps to make it too", q.Rel())
		}
		return contract.Result{}, err
	}
	return i32Result(1, "made directory "+q.Rel()), nil
}

func removeFile(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessWrite, false)
	if err != nil {
		return contract.Result{}, err
	}
	if q.IsRoot() {
		return contract.Result{}, errf(ErrIsDir, ". is the session root, a directory")
	}
	n, ok, err := c.s.Tree().Lookup(q)
	switch {
	case err != nil:
		return contract.Result{}, err
	case !ok:
		return contract.Result{}, errf(ErrNotFound, "%s does not exist; list its directory to see what does", q.Rel())
	case n.IsDir():
		return contract.Result{}, errf(ErrIsDir, "%s is a directory; remove it with remove_dir_all_v1", q.Rel())
	}
	if err := c.s.Remove(c.ctx, q, vfs.RemoveOptions{}); err != nil {
		return contract.Result{}, err
	}
	return i32Result(1, "removed "+q.Rel()), nil
}

func removeDirAll(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessWrite, false)
	if err != nil {
		return contract.Result{}, err
	}
	if q.IsRoot() {
		return contract.Result{}, errf(ErrPolicyDeny, "the session root cannot be removed; remove the entries in it")
	}
	n, ok, err := c.s.Tree().Lookup(q)
	switch {
	case err != nil:
		return contract.Result{}, err
	case !ok:
		return contract.Result{}, errf(ErrNotFound, "%s does not exist; list its directory to see what does", q.Rel())
	case !n.IsDir():
		return contract.Result{}, errf(ErrNotDir, "%s is a %s, not a directory; remove it with remove_file_v1", q.Rel(), n.Kind)
	}
	if err := c.s.Remove(c.ctx, q, vfs.RemoveOptions{Recursive: true}); err != nil {
		return contract.Result{}, err
	}
	return i32Result(1, "removed "+q.Rel()+" and everything in it"), nil
}

func rename(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	src, err := c.path(p, "src", vfs.AccessWrite, false)
	if err != nil {
		return contract.Result{}, err
	}
	dst, err := c.path(p, "dst", vfs.AccessWrite, false)
	if err != nil {
		return contract.Result{}, err
	}
	if src.IsRoot() || dst.IsRoot() {
		return contract.Result{}, errf(ErrPolicyDeny, "the session root cannot be renamed or replaced")
	}
	if _, ok, err := c.s.Tree().Lookup(src); err != nil {
		return contract.Result{}, err
	} else if !ok {
		return contract.Result{}, errf(ErrNotFound, "%s does not exist; list its directory to see what does", src.Rel())
	}
	if dst != src && dst.HasPrefix(src) {
		return contract.Result{}, errf(ErrBadPath, "cannot move %s into itself (%s)", src.Rel(), dst.Rel())
	}
	if err := c.s.Rename(c.ctx, src, dst, vfs.RenameOptions{}); err != nil {
		return contract.Result{}, err
	}
	return i32Result(1, fmt.Sprintf("renamed %s to %s", src.Rel(), dst.Rel())), nil
}

// sortedText renders lines sorted ascending (byte order), each ending in
// '\n'; no lines is "\n".
func sortedText(lines []string) string {
	if len(lines) == 0 {
		return "\n"
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

func textResult(s string) contract.Result {
	return result(okBytes{OK: true, BytesB64: base64.StdEncoding.EncodeToString([]byte(s)), Text: &s}, s)
}

func (c *call) dir(q vfs.Path) error {
	n, err := c.s.Stat(c.ctx, q)
	if err != nil {
		return err
	}
	if !n.IsDir() {
		return errf(ErrNotDir, "%s is a %s, not a directory", q.Rel(), n.Kind)
	}
	return nil
}

func listDir(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessRead, true)
	if err != nil {
		return contract.Result{}, err
	}
	if err := c.dir(q); err != nil {
		return contract.Result{}, err
	}
	max := limit(c.pol.Caps.MaxEntries, defaultMaxEntries, c.caps.MaxEntries)
	var names []string
	var tooMany bool
	err = c.s.Tree().ChildrenErr(q, func(name string, _ vfs.Node) bool {
		if !c.visible(q.Join(name)) {
			return true
		}
		names = append(names, name)
		tooMany = int64(len(names)) > max
		return !tooMany
	})
	if err != nil {
		return contract.Result{}, err // FS_ERR_IO, never an empty listing
	}
	if tooMany {
		return contract.Result{}, errf(ErrTooManyEntries, "%s has more than %d entries (the effective max_entries); walk it with a narrower glob or raise max_entries in caps", q.Rel(), max)
	}
	return textResult(sortedText(names)), nil
}

func walkGlob(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	root, err := c.path(p, "root", vfs.AccessRead, true)
	if err != nil {
		return contract.Result{}, err
	}
	if err := c.dir(root); err != nil {
		return contract.Result{}, err
	}
	var glob string
	if err := json.Unmarshal(p["glob"], &glob); err != nil {
		return contract.Result{}, errf(ErrBadPath, "glob must be a string such as \"**/*.txt\"")
	}
	re, err := compileGlob(glob)
	if err != nil {
		return contract.Result{}, errf(ErrBadPath, "%v", err)
	}
	w := &walker{c: c, tree: c.s.Tree(), match: re.MatchString,
		maxEntries: limit(c.pol.Caps.MaxEntries, defaultMaxEntries, c.caps.MaxEntries),
		maxDepth:   limit(c.pol.Caps.MaxWalkDepth, defaultMaxWalkDeep, c.caps.MaxDepth)}
	if err := w.walk(root, "", 0, []vfs.Path{root}); err != nil {
		return contract.Result{}, err
	}
	return textResult(sortedText(w.out)), nil
}

// walker walks a directory for walk_glob_sorted_text_v1.
type walker struct {
	c          *call
	tree       vfs.Tree
	match      func(string) bool
	maxEntries int64
	maxDepth   int64
	out        []string
}

// walk visits dir's entries (rel is dir's path relative to the walk root,
// depth its depth, chain the directories followed to reach it). Every
// visible entry counts for the depth limit, as in the runner; only
// non-directories are listed. A symlink is listed; with symlinks followed,
// one that leads to a directory is walked too, and a loop is FS_ERR_IO.
func (w *walker) walk(dir vfs.Path, rel string, depth int64, chain []vfs.Path) error {
	var err error
	lerr := w.tree.ChildrenErr(dir, func(name string, n vfs.Node) bool {
		if err = w.c.ctx.Err(); err != nil {
			return false
		}
		child := dir.Join(name)
		if !w.c.visible(child) {
			return true
		}
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if depth+1 > w.maxDepth {
			err = errf(ErrDepthExceeded, "%s lies %d levels below the walk root; the effective max_depth is %d: walk a subdirectory or raise max_depth in caps", childRel, depth+1, w.maxDepth)
			return false
		}
		target := child
		if n.IsSymlink() && w.c.symlinksFollowed() {
			t, rerr := w.c.resolve(child, true)
			if errors.Is(rerr, vfs.ErrIO) {
				err = rerr
				return false
			}
			if rerr == nil && w.c.visible(t) {
				tn, ok, lerr := w.tree.Lookup(t)
				if lerr != nil {
					err = lerr
					return false
				}
				if ok && tn.IsDir() {
					n, target = tn, t
				}
			}
		}
		if n.IsDir() {
			// Walking a followed link's target loops when the target holds a
			// directory already on the way here.
			if target != child && slices.ContainsFunc(chain, func(a vfs.Path) bool { return a.HasPrefix(target) }) {
				err = errf(ErrIO, "symlink %s leads back to %s: a loop", child.Rel(), target.Rel())
				return false
			}
			err = w.walk(target, childRel, depth+1, append(chain, target))
			return err == nil
		}
		if w.match(childRel) {
			w.out = append(w.out, childRel)
			if int64(len(w.out)) > w.maxEntries {
				err = errf(ErrTooManyEntries, "more than %d paths match (the effective max_entries); narrow the glob or the root, or raise max_entries in caps", w.maxEntries)
				return false
			}
		}
		return true
	})
	if err == nil {
		err = lerr // FS_ERR_IO: an unreadable directory is not an empty one
	}
	return err
}

func stat(c *call, p map[string]json.RawMessage) (contract.Result, error) {
	q, err := c.path(p, "path", vfs.AccessRead, false)
	if err != nil {
		return contract.Result{}, err
	}
	st := FsStatV1{Version: structVersion, Kind: KindMissing}
	n, err := c.s.Stat(c.ctx, q)
	switch code := vfs.CodeOf(err); {
	case err == nil:
		st.Kind = kindOf(n)
		if n.IsFile() {
			st.SizeBytes = clampU32(n.Size)
		}
		st.MtimeUnixSecs = clampU32(n.Mtime / 1e9)
	case code == vfs.CodeNotFound || code == vfs.CodeNotDir:
	default:
		return contract.Result{}, err
	}
	text := fmt.Sprintf("%s: %s", q.Rel(), KindName(st.Kind))
	if st.Kind != KindMissing {
		text += fmt.Sprintf(", %d bytes, mtime %d", st.SizeBytes, st.MtimeUnixSecs)
	}
	return result(okBytes{OK: true, BytesB64: base64.StdEncoding.EncodeToString(st.Encode()), Stat: &st}, text), nil
}

func kindOf(n vfs.Node) uint32 {
	switch {
	case n.IsFile():
		return KindFile
	case n.IsDir():
		return KindDir
	case n.IsSymlink():
		return KindSymlink
	}
	return KindOther
}

func capsResult(c FsCapsV1) contract.Result {
	return result(okBytes{OK: true, BytesB64: base64.StdEncoding.EncodeToString(c.Encode()), Caps: &c},
		fmt.Sprintf("FsCapsV1 %s (max_read_bytes %d, max_write_bytes %d, max_entries %d, max_depth %d, flags %d)",
			base64.StdEncoding.EncodeToString(c.Encode()), c.MaxReadBytes, c.MaxWriteBytes, c.MaxEntries, c.MaxDepth, c.Flags))
}

func capsDefault(raw json.RawMessage) contract.Result {
	if _, err := decodeParams(raw, nil, nil); err != nil {
		return failure(asFS(err))
	}
	return capsResult(DefaultCaps())
}

func capsPack(raw json.RawMessage) contract.Result {
	names := []string{"max_read_bytes", "max_write_bytes", "max_entries", "max_depth", "flags"}
	p, err := decodeParams(raw, names, nil)
	if err != nil {
		return failure(asFS(err))
	}
	var v [5]uint32
	for i, n := range names {
		raw, ok := p[n]
		if !ok {
			continue
		}
		var x int64
		if err := json.Unmarshal(raw, &x); err != nil || x < -1<<31 || x > 1<<32-1 {
			return failure(errf(ErrBadCaps, "%s must be an integer from 0 to 4294967295 (an i32's bits also do)", n))
		}
		v[i] = uint32(x)
	}
	return capsResult(PackCaps(v[0], v[1], v[2], v[3], v[4]))
}

var (
	_ contract.PolicyDecoder    = (*X07)(nil)
	_ contract.PolicyOperations = (*X07)(nil)
)
