// Package x07 is the X07 ext-fs v1 contract (../shared/seeds/
// 004_91e66baa6289ebf6.txt): the nine std.os.fs operations under their own
// names (read_all_v1, write_all_v1, mkdirs_v1, remove_file_v1,
// remove_dir_all_v1, rename_v1, list_dir_sorted_text_v1,
// walk_glob_sorted_text_v1, stat_v1) and the two caps builders of
// std.os.fs.spec, over JSON.
//
// Bytes travel as base64: caps (FsCapsV1, 24 bytes), data, read_all_v1's
// result and stat_v1's FsStatV1 (16 bytes). Paths, globs and the sorted
// list/walk text are UTF-8 strings. A success is {"ok":true,...}; a failure
// is {"ok":false,"code":60010,"name":"FS_ERR_NOT_FOUND","message":...} with
// the document's code table.
package x07

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Name is the contract's name.
const Name = "x07"

// The operations, named as the document names them.
const (
	opReadAll      = "read_all_v1"
	opWriteAll     = "write_all_v1"
	opMkdirs       = "mkdirs_v1"
	opRemoveFile   = "remove_file_v1"
	opRemoveDirAll = "remove_dir_all_v1"
	opRename       = "rename_v1"
	opListDir      = "list_dir_sorted_text_v1"
	opWalkGlob     = "walk_glob_sorted_text_v1"
	opStat         = "stat_v1"
	opCapsDefault  = "caps_default_v1"
	opCapsPack     = "caps_pack_v1"
)

// vfsdEquivalent is vfsd's own tool for each operation: a policy written
// for vfsd's tools (allowed_ops) allows the x07 operation that does the
// same.
var vfsdEquivalent = map[string]string{
	opReadAll: "read_file", opWriteAll: "write_file", opMkdirs: "mkdir", opRemoveFile: "delete_file",
	opRemoveDirAll: "delete_file", opRename: "rename", opListDir: "list_directory", opWalkGlob: "glob", opStat: "stat",
}

// X07 is the contract.
type X07 struct{}

func init() { contract.Register(&X07{}) }

// Name returns "x07".
func (*X07) Name() string { return Name }

// Call runs one operation. Tool names may also be given as the document's
// module paths (std.os.fs.read_all_v1, os.fs.read_all_v1,
// std.os.fs.spec.caps_pack_v1).
func (x *X07) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	return contract.Guard(func() contract.Result { return x.dispatch(ctx, env, tool, params) },
		func(r any) contract.Result {
			return failure(errf(ErrIO, "internal error in %s: %v; the session is unchanged", tool, r))
		})
}

// dispatch is Call's body, run under contract.Guard.
func (x *X07) dispatch(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	name := tool
	for _, prefix := range []string{"std.os.fs.spec.", "std.os.fs.", "os.fs."} {
		name = strings.TrimPrefix(name, prefix)
	}
	op, ok := operations[name]
	if !ok {
		return failure(errf(ErrUnsupported, "no operation named %q; the operations are %s", tool, strings.Join(toolNames(), ", ")))
	}
	if op.pure != nil {
		return op.pure(params)
	}
	if env == nil || env.Session == nil {
		return failure(errf(ErrIO, "no session to run %s on", name))
	}
	pol := env.Policy
	if pol == nil && env.Tools != nil {
		pol = env.Tools.Policy()
	}
	if pol == nil {
		pol = x.DefaultPolicy()
	}
	c := &call{ctx: ctx, s: env.Session, pol: pol, op: name}
	out, err := c.run(op, params)
	if err != nil {
		return failure(asFS(err))
	}
	return out
}

// operation is one tool: its description, schema and implementation.
type operation struct {
	title, desc string
	schema      string
	ann         contract.Annotations
	// params lists the parameter names; pathParams are those decoded as
	// paths (FS_ERR_BAD_PATH when malformed).
	params, pathParams []string
	run                func(c *call, p map[string]json.RawMessage) (contract.Result, error)
	pure               func(params json.RawMessage) contract.Result
}

// call is one operation's context.
type call struct {
	ctx  context.Context
	s    *vfs.Session
	pol  *policy.Policy
	op   string
	caps FsCapsV1
}

// run checks, in the runner's order: parameters, caps, fs.enabled, the
// operation's allow flag, the symlink flag; then the operation itself
// parses and resolves its paths.
func (c *call) run(op *operation, raw json.RawMessage) (contract.Result, error) {
	p, err := decodeParams(raw, op.params, op.pathParams)
	if err != nil {
		return contract.Result{}, err
	}
	c.caps = DefaultCaps()
	if v, ok := p["caps"]; ok {
		b, err := decodeB64(v)
		if err != nil {
			return contract.Result{}, errf(ErrBadCaps, "caps must be an FsCapsV1 in base64: %v; omit it for caps_default_v1 or build one with caps_pack_v1", err)
		}
		if c.caps, err = DecodeCaps(b); err != nil {
			return contract.Result{}, errf(ErrBadCaps, "%v; build caps with caps_pack_v1", err)
		}
	}
	if slices.Contains(c.pol.AllowedOps, DisabledOp) {
		return contract.Result{}, errf(ErrDisabled, "the filesystem is disabled for this session (fs.enabled is false in its policy)")
	}
	if !c.allows(c.op) {
		return contract.Result{}, errf(ErrPolicyDeny, "%s is not allowed by the %s policy (its fs.allow_* flags or empty fs.read_roots / fs.write_roots)", c.op, c.pol.Name)
	}
	if c.caps.Has(FlagAllowSymlinks) && c.pol.Symlinks == policy.SymlinksDeny {
		return contract.Result{}, errf(ErrSymlinkDenied, "caps ask for ALLOW_SYMLINKS (bit 0) but the %s policy does not allow symlinks; clear the flag", c.pol.Name)
	}
	return op.run(c, p)
}

func (c *call) allows(op string) bool {
	return c.pol.Allows(op) || (vfsdEquivalent[op] != "" && c.pol.Allows(vfsdEquivalent[op]))
}

// symlinksFollowed: the policy allows symlinks and the caps ask for them.
func (c *call) symlinksFollowed() bool {
	return c.pol.Symlinks != policy.SymlinksDeny && c.caps.Has(FlagAllowSymlinks)
}

// limit is effective_max = min(policy max, caps max) for a non-zero caps
// value; a zero caps max (or an unbounded policy) means policy/default.
func limit(policyMax int64, def, capsMax uint32) int64 {
	m := policyMax
	if m <= 0 {
		m = int64(def)
	}
	if capsMax != 0 && int64(capsMax) < m {
		return int64(capsMax)
	}
	return m
}

// path parses a path parameter by the document's rules, resolves its
// symlinks as the policy and caps allow, and checks it against the policy
// for access a.
func (c *call) path(p map[string]json.RawMessage, param string, a vfs.Access, followLast bool) (vfs.Path, error) {
	var raw string
	if err := json.Unmarshal(p[param], &raw); err != nil {
		return "", errf(ErrBadPath, "%s must be a string: a '/'-separated UTF-8 path such as \"src/main.x07\"", param)
	}
	q, err := parsePath(param, raw)
	if err != nil {
		return "", err
	}
	if err := c.pol.CheckInput(raw); err != nil {
		return "", errf(ErrBadPath, "%s %q has a \"..\" segment; \"..\" is rejected, use a path from the session root", param, raw)
	}
	q, err = c.resolve(q, followLast)
	if err != nil {
		return "", err
	}
	if err := c.pol.Check(a, q); err != nil {
		return "", errf(ErrPolicyDeny, "%s", policyMessage(err))
	}
	if q.IsRoot() && a == vfs.AccessRead && len(c.pol.ReadRoots) > 0 && !slices.Contains(c.pol.ReadRoots, "/") {
		return "", errf(ErrPolicyDeny, "the session root is outside the read roots %s; give a path inside one", strings.Join(c.pol.ReadRoots, ", "))
	}
	return q, nil
}

// parsePath applies "Path encoding (v1)": UTF-8, '/' separators (a
// backslash is refused: it separates on Windows), no NUL, no empty segment
// (so no leading, trailing or doubled '/'), "." ignored, ".." rejected. A
// path of "." segments only names the session root.
func parsePath(param, raw string) (vfs.Path, error) {
	switch {
	case raw == "":
		return "", errf(ErrBadPath, "%s is empty; give a path such as \"data/in.txt\", or \".\" for the session root", param)
	case !utf8.ValidString(raw):
		return "", errf(ErrBadPath, "%s is not valid UTF-8", param)
	case strings.IndexByte(raw, 0) >= 0:
		return "", errf(ErrBadPath, "%s %q contains a NUL byte", param, raw)
	case strings.IndexByte(raw, '\\') >= 0:
		return "", errf(ErrBadPath, "%s %q contains '\\'; use '/' as the separator on every platform", param, raw)
	}
	var segs []string
	for seg := range strings.SplitSeq(raw, "/") {
		switch seg {
		case "":
			return "", errf(ErrBadPath, "%s %q has an empty segment (a leading, trailing or doubled '/'); paths are relative, like \"a/b\"", param, raw)
		case ".":
			continue
		case "..":
			return "", errf(ErrBadPath, "%s %q has a \"..\" segment; \"..\" is rejected, use a path from the session root", param, raw)
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return vfs.Root, nil
	}
	q, err := vfs.ParsePath(strings.Join(segs, "/"))
	if err != nil {
		return "", errf(ErrBadPath, "%s %q: %s", param, raw, vfsMsg(err))
	}
	return q, nil
}

// resolve follows the symlinks in p: a path through a symlink is
// FS_ERR_SYMLINK_DENIED unless symlinks are followed; a target outside the
// session is outside every allow-root (FS_ERR_POLICY_DENY).
func (c *call) resolve(p vfs.Path, followLast bool) (vfs.Path, error) {
	q, err := c.s.Tree().ResolveSymlinks(p, vfs.SymlinkOptions{
		Follow:       c.symlinksFollowed(),
		NoFollowLast: !followLast,
		WithinRoot:   c.pol.Symlinks == policy.SymlinksWithinRoot,
	})
	var se *vfs.SymlinkError
	if !errors.As(err, &se) {
		return q, err // FS_ERR_IO: an unreadable directory is not a missing one
	}
	switch se.Reason {
	case vfs.SymlinkNotFollowed:
		if c.pol.Symlinks == policy.SymlinksDeny {
			return "", errf(ErrSymlinkDenied, "%s is a symlink, and the %s policy does not allow symlinks", se.Link.Rel(), c.pol.Name)
		}
		return "", errf(ErrSymlinkDenied, "%s is a symlink; set ALLOW_SYMLINKS (bit 0) in caps to follow it", se.Link.Rel())
	case vfs.SymlinkLoop:
		return "", errf(ErrIO, "too many levels of symlinks resolving %s", p.Rel())
	case vfs.SymlinkEscapes:
		return "", errf(ErrPolicyDeny, "symlink %s points to %q, outside the session's allow-roots", se.Link.Rel(), se.Target)
	default: // vfs.SymlinkBadTarget
		return "", errf(ErrBadPath, "symlink %s has a target %q that is not a session path", se.Link.Rel(), se.Target)
	}
}

// visible: a listing or walk shows p (the policy would let it be read:
// hidden entries are left out where hidden paths are denied).
func (c *call) visible(p vfs.Path) bool { return !c.pol.Hidden(p) }

// decodeParams checks the parameter object: an object, only known names
// (an unknown one is FS_ERR_UNSUPPORTED naming it), the required ones
// present.
func decodeParams(raw json.RawMessage, names, pathNames []string) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return nil, errf(ErrUnsupported, "parameters must be a JSON object with %s", strings.Join(names, ", "))
	}
	var unknown []string
	for k := range p {
		if !slices.Contains(names, k) && k != "caps" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, errf(ErrUnsupported, "unknown parameter %q; the parameters are %s", unknown[0], strings.Join(names, ", "))
	}
	for k, v := range p {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(p, k)
		}
	}
	for _, n := range names {
		if _, ok := p[n]; !ok && n != "caps" {
			if slices.Contains(pathNames, n) {
				return nil, errf(ErrBadPath, "%s is required: a '/'-separated path such as \"data/in.txt\"", n)
			}
			if n == "data" {
				return nil, errf(ErrUnsupported, "data is required: the bytes to write, in base64 (\"\" writes an empty file)")
			}
		}
	}
	return p, nil
}

// decodeB64 decodes a JSON string of standard base64 (padding optional).
func decodeB64(v json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, errors.New("not a string")
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	return b, nil
}

// asFS classifies any error as one of the document's codes.
func asFS(err error) *fsError {
	var fe *fsError
	if errors.As(err, &fe) {
		return fe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errf(ErrIO, "the call was cancelled: %v; the session is unchanged", err)
	}
	msg := vfsMsg(err)
	switch vfs.CodeOf(err) {
	case vfs.CodeNotFound:
		return errf(ErrNotFound, "%s; list the parent directory to see what exists", msg)
	case vfs.CodeExists, vfs.CodeNotEmpty:
		return errf(ErrAlreadyExists, "%s", msg)
	case vfs.CodeNotDir:
		return errf(ErrNotDir, "%s", msg)
	case vfs.CodeIsDir:
		return errf(ErrIsDir, "%s", msg)
	case vfs.CodeForbidden:
		return errf(ErrPolicyDeny, "%s", policyMessage(err))
	case vfs.CodeInvalidPath, vfs.CodeInvalid, vfs.CodeInvalidPattern:
		return errf(ErrBadPath, "%s", msg)
	case vfs.CodeTooLarge, vfs.CodeNoSpace:
		return errf(ErrTooLarge, "%s", msg)
	case vfs.CodePermission:
		return errf(ErrPermission, "%s", msg)
	}
	return errf(ErrIO, "%s", msg)
}

func vfsMsg(err error) string {
	var ve *vfs.Error
	if errors.As(err, &ve) && ve.Msg != "" {
		return ve.Error()
	}
	return err.Error()
}

func policyMessage(err error) string {
	var ve *vfs.Error
	if errors.As(err, &ve) {
		return fmt.Sprintf("%s: %s", strings.TrimPrefix(ve.Path, "/"), ve.Msg)
	}
	return err.Error()
}

// The result bodies.
type (
	okBytes struct {
		OK       bool      `json:"ok"`
		BytesB64 string    `json:"bytes_b64"`
		Text     *string   `json:"text,omitempty"`
		Stat     *FsStatV1 `json:"stat,omitempty"`
		Caps     *FsCapsV1 `json:"caps,omitempty"`
	}
	okI32 struct {
		OK    bool  `json:"ok"`
		Value int32 `json:"value"`
	}
	errBody struct {
		OK      bool   `json:"ok"`
		Code    int    `json:"code"`
		Name    string `json:"name"`
		Message string `json:"message"`
	}
)

func result(body any, text string) contract.Result {
	b, _ := json.Marshal(body)
	return contract.Result{Body: b, Text: text, Status: "ok"}
}

func failure(e *fsError) contract.Result {
	b, _ := json.Marshal(errBody{Code: int(e.Code), Name: e.Code.Name(), Message: e.Msg})
	return contract.Result{Body: b, Text: fmt.Sprintf("%s (%d): %s", e.Code.Name(), int(e.Code), e.Msg),
		Status: e.Code.Name(), IsError: true}
}

func bytesResult(b []byte, text string) contract.Result {
	return result(okBytes{OK: true, BytesB64: base64.StdEncoding.EncodeToString(b)}, text)
}

func i32Result(v int32, text string) contract.Result {
	return result(okI32{OK: true, Value: v}, text)
}
