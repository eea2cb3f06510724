package posfilesystem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// Name is the contract's name, and ToolName its one tool's.
const (
	Name     = "pos_filesystem"
	ToolName = "pos_filesystem"
)

// DefaultMaxSizeMB is read's size guard when max_size_mb is not given:
// `"max_size_mb": int = 10, # Safety limit for read`.
const DefaultMaxSizeMB = 10

// The actions, in the document's order.
var actions = []string{"read", "write", "list", "delete", "exists", "mkdir"}

// actionOps are the vfsd operations each action is, for the policy's
// allowed_ops, and the access it needs.
var actionOps = map[string]struct {
	op     string
	access vfs.Access
}{
	"read":   {"read_file", vfs.AccessRead},
	"write":  {"write_file", vfs.AccessWrite},
	"list":   {"list_directory", vfs.AccessRead},
	"delete": {"delete_file", vfs.AccessWrite},
	"exists": {"exists", vfs.AccessRead},
	"mkdir":  {"mkdir", vfs.AccessWrite},
}

// The error types: the Python exception class names the document's
// error_type gives ("FileNotFoundError, PermissionError, etc.").
const (
	errValue         = "ValueError"
	errNotFound      = "FileNotFoundError"
	errPermission    = "PermissionError"
	errIsDir         = "IsADirectoryError"
	errNotDir        = "NotADirectoryError"
	errExists        = "FileExistsError"
	errOS            = "OSError"
	errLookup        = "LookupError"
	errUnicodeDecode = "UnicodeDecodeError"
	errUnicodeEncode = "UnicodeEncodeError"
)

// ErrorTypes lists every error_type the contract reports.
func ErrorTypes() []string {
	return []string{errValue, errNotFound, errPermission, errIsDir, errNotDir, errExists, errOS,
		errLookup, errUnicodeDecode, errUnicodeEncode}
}

// toolError is a failed call: its error_type and message.
type toolError struct {
	typ string
	msg string
}

func (e *toolError) Error() string { return e.typ + ": " + e.msg }

// Body is the document's "MCP Tool Output Schema": every result has
// success, action, path and message; the action-specific fields are there
// when the action fills them, error and error_type when success is false.
type Body struct {
	Success bool   `json:"success"`
	Action  string `json:"action"`
	Path    string `json:"path"`
	Message string `json:"message"`

	Content   *string   `json:"content,omitempty"`
	Exists    *bool     `json:"exists,omitempty"`
	Entries   *[]string `json:"entries,omitempty"`
	SizeBytes *int64    `json:"size_bytes,omitempty"`
	Lines     *int      `json:"lines,omitempty"`
	// Truncated is vfsd's: set (true) only on a list cut short by the
	// policy's max_entries cap.
	Truncated *bool `json:"truncated,omitempty"`

	Error     *string `json:"error,omitempty"`
	ErrorType *string `json:"error_type,omitempty"`
}

type posContract struct{}

func init() { contract.Register(posContract{}) }

// Name implements contract.Contract.
func (posContract) Name() string { return Name }

// DefaultPolicy implements contract.PolicyDefaulter.
func (posContract) DefaultPolicy() *policy.Policy { return DefaultPolicy() }

// DecodePolicy implements contract.PolicyDecoder.
func (posContract) DecodePolicy(raw json.RawMessage) (*policy.Policy, error) {
	return DecodePolicy(raw)
}

// Tools implements contract.Contract: the one consolidated tool.
func (posContract) Tools() []contract.Tool {
	return []contract.Tool{{
		Name:        ToolName,
		Title:       "Workspace files (pos_filesystem)",
		Description: toolDescription,
		InputSchema: json.RawMessage(inputSchema),
		// One tool does every action: it may write and delete, and every
		// action leaves the same state when repeated.
		Annotations: contract.Annotations{ReadOnly: false, Destructive: true, Idempotent: true},
	}}
}

// Prompt implements contract.Contract.
func (posContract) Prompt() string { return prompt }

// Call implements contract.Contract.
func (posContract) Call(ctx context.Context, env *contract.Env, tool string, raw json.RawMessage) contract.Result {
	b := &Body{} // shared with the panic handler, which renders the body the call began
	return contract.Guard(func() contract.Result {
		if tool != ToolName {
			failBody(b, &toolError{typ: errValue, msg: fmt.Sprintf("no tool named %q; this contract has one tool, %s, with an action parameter", tool, ToolName)})
			return render(b)
		}
		if err := call(ctx, env, raw, b); err != nil {
			failBody(b, err)
		}
		return render(b)
	}, func(r any) contract.Result {
		failBody(b, &toolError{typ: errOS, msg: fmt.Sprintf("internal error: %v; the workspace is unchanged", r)})
		return render(b)
	})
}

func call(ctx context.Context, env *contract.Env, raw json.RawMessage, b *Body) error {
	p, err := decodeParams(raw)
	if p.Action != nil {
		b.Action = *p.Action
	}
	if p.Path != nil {
		b.Path = *p.Path
	}
	if err != nil {
		return err
	}
	if p.Action == nil {
		return &toolError{typ: errValue, msg: "action is required: one of " + strings.Join(actions, ", ")}
	}
	op, ok := actionOps[*p.Action]
	if !ok {
		return &toolError{typ: errValue, msg: fmt.Sprintf("Unknown action %q; use one of %s", *p.Action, strings.Join(actions, ", "))}
	}
	if p.Path == nil {
		return &toolError{typ: errValue, msg: "path is required: a path relative to the project root, such as \"docs/notes.md\" (\".\" for the root)"}
	}
	pol := env.Tools.Policy()
	if !pol.Allows(op.op) {
		return &toolError{typ: errPermission, msg: fmt.Sprintf("action %q is not allowed by the %s policy (it allows %s)", *p.Action, pol.Name, allowedActions(pol))}
	}
	rp, err := resolvePath(env.Session.Tree(), pol, *p.Path, op.access)
	if err != nil {
		return err
	}
	x := &exec{ctx: ctx, env: env, pol: pol, p: p, rp: rp, b: b}
	switch *p.Action {
	case "read":
		err = x.read()
	case "write":
		err = x.write()
	case "list":
		err = x.list()
	case "delete":
		err = x.delete()
	case "exists":
		err = x.exists()
	case "mkdir":
		err = x.mkdir()
	}
	if err != nil {
		return err
	}
	b.Success = true
	if len(p.Ignored) > 0 {
		b.Message += fmt.Sprintf(" (ignored parameters pos_filesystem does not take: %s)", strings.Join(p.Ignored, ", "))
	}
	return nil
}

// allowedActions names the actions a policy allows.
func allowedActions(pol *policy.Policy) string {
	var out []string
	for _, a := range actions {
		if pol.Allows(actionOps[a].op) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return "no action"
	}
	return strings.Join(out, ", ")
}

// exec is one call, its path resolved.
type exec struct {
	ctx context.Context
	env *contract.Env
	pol *policy.Policy
	p   *params
	rp  vfs.Path
	b   *Body
}

// echo is the path as the caller gave it, for messages ("." for "").
func (x *exec) echo() string {
	if x.b.Path == "" {
		return "."
	}
	return x.b.Path
}

// name is Python's path.name: the last segment.
func name(p vfs.Path) string {
	if p.IsRoot() {
		return "."
	}
	return p.Base()
}

func (x *exec) codec() (codec, error) {
	if x.p.Encoding == nil {
		return codecUTF8, nil
	}
	return lookupCodec(*x.p.Encoding)
}

func (x *exec) read() error {
	c, err := x.codec()
	if err != nil {
		return err
	}
	mb := DefaultMaxSizeMB
	if x.p.MaxSizeMB != nil {
		mb = *x.p.MaxSizeMB
	}
	limit := int64(mb) << 20
	guard := fmt.Sprintf("max_size_mb=%d", mb)
	if capBytes := x.pol.Caps.MaxReadBytes; capBytes > 0 && limit > capBytes {
		limit = capBytes
		guard += fmt.Sprintf(", capped at %s by the %s policy", mbWords(capBytes), x.pol.Name)
	}
	n, ok, err := x.env.Session.Tree().Lookup(x.rp)
	switch {
	case err != nil:
		return err // an unreadable directory is OSError, never "no such file"
	case !ok:
		return notFound(x.rp)
	case n.IsDir():
		return &toolError{typ: errIsDir, msg: fmt.Sprintf("Is a directory: '%s'; use action \"list\" to see its entries", x.rp.Rel())}
	case !n.IsFile():
		return &toolError{typ: errOS, msg: fmt.Sprintf("'%s' is a %s, not a regular file, and has no text to read", x.rp.Rel(), n.Kind)}
	}
	rd, err := x.env.Session.Open(x.ctx, x.rp)
	if err != nil {
		return err
	}
	defer rd.Close()
	size := rd.Size()
	ranged := x.p.StartLine != nil || x.p.LineCount != nil
	if !ranged && size > limit {
		return &toolError{typ: errValue, msg: fmt.Sprintf(
			"File too large: %s is %s, over the read limit (%s); read part of it with start_line and line_count, or pass a larger max_size_mb",
			name(x.rp), mbWords(size), guard)}
	}
	if nul, err := hasNUL(rd, size); err != nil {
		return err
	} else if nul {
		return &toolError{typ: errValue, msg: fmt.Sprintf(
			"Binary file detected: %s has NUL bytes in its first 8 KB; pos_filesystem reads text files only", name(x.rp))}
	}
	q := readRequest{start: 1, limit: limit, codec: c, name: name(x.rp)}
	if x.p.StartLine != nil && *x.p.StartLine > 1 {
		q.start = *x.p.StartLine
	}
	if x.p.LineCount != nil {
		q.count = *x.p.LineCount
	}
	res, err := readLines(rd, size, q)
	var over errOverLimit
	if errors.As(err, &over) {
		return &toolError{typ: errValue, msg: fmt.Sprintf(
			"File too large: lines %d-%d of %s are over the read limit (%s); ask for fewer lines with line_count",
			q.start, over.at, name(x.rp), guard)}
	}
	if err != nil {
		return err
	}
	x.b.Content, x.b.Lines, x.b.SizeBytes = &res.content, &res.lines, &res.bytes
	if ranged {
		x.b.Message = fmt.Sprintf("Read lines %d-%d from %s", q.start, q.start+res.lines, name(x.rp))
		if res.lines == 0 && res.total >= 0 {
			x.b.Message += fmt.Sprintf(" (no lines: the file has %d)", res.total)
		}
		return nil
	}
	x.b.Message = fmt.Sprintf("Read %s lines (%s bytes) from %s", commas(int64(res.lines)), commas(res.bytes), name(x.rp))
	return nil
}

func (x *exec) write() error {
	if x.p.Content == nil {
		return &toolError{typ: errValue, msg: "content is required for action \"write\": the file's new text (\"\" for an empty file)"}
	}
	c, err := x.codec()
	if err != nil {
		return err
	}
	content := *x.p.Content
	data, err := c.encode(content)
	if err != nil {
		return err
	}
	createDirs := x.p.CreateDirs == nil || *x.p.CreateDirs
	tree := x.env.Session.Tree()
	n, ok, err := tree.Lookup(x.rp)
	if err != nil {
		return err
	}
	if x.rp.IsRoot() || ok && n.IsDir() {
		return &toolError{typ: errIsDir, msg: fmt.Sprintf("Is a directory: '%s'; name a file to write", x.rp.Rel())}
	}
	if !createDirs {
		if err := parentExists(tree, x.rp); err != nil {
			return err
		}
	}
	args := map[string]any{"path": string(x.rp), "mode": "create", "create_parents": createDirs}
	if c == codecUTF8 {
		args["inline_text"] = content // the character caps apply to text
	} else {
		args["inline_bytes"] = data
	}
	resp, err := x.tool("write_file", args)
	if err != nil {
		return err
	}
	r := resp.Receipt.(*tools.WriteFileReceipt)
	size, lines := r.WrittenBytes, strings.Count(content, "\n")+1
	x.b.SizeBytes, x.b.Lines = &size, &lines
	x.b.Message = fmt.Sprintf("Wrote %s bytes to %s", commas(int64(utf8.RuneCountInString(content))), name(x.rp))
	return nil
}

// parentExists is the error a write without create_dirs meets when rp's
// parent is missing or not a directory.
func parentExists(tree vfs.Tree, rp vfs.Path) error {
	parent := rp.Parent()
	for q := parent; ; q = q.Parent() {
		n, ok, err := tree.Lookup(q)
		if err != nil {
			return err
		}
		if ok {
			if !n.IsDir() {
				return &toolError{typ: errNotDir, msg: fmt.Sprintf("Not a directory: '%s' is a file, so '%s' cannot be created in it", q.Rel(), rp.Rel())}
			}
			if q != parent {
				break
			}
			return nil
		}
		if q.IsRoot() {
			break
		}
	}
	return &toolError{typ: errNotFound, msg: fmt.Sprintf(
		"No such file or directory: the directory '%s' does not exist; pass create_dirs=true (the default) or create it with action \"mkdir\"", parent.Rel())}
}

func (x *exec) list() error {
	entries, err := x.env.Session.List(x.ctx, x.rp)
	if err != nil {
		var ve *vfs.Error
		if errors.As(err, &ve) && ve.Code == vfs.CodeNotFound {
			return notFound(x.rp)
		}
		if errors.As(err, &ve) && ve.Code == vfs.CodeNotDir {
			return &toolError{typ: errNotDir, msg: fmt.Sprintf("Not a directory: '%s'; use action \"read\" to read a file", x.rp.Rel())}
		}
		return err
	}
	names := []string{}
	truncated := false
	limit := x.pol.Caps.MaxEntries
	for _, e := range entries {
		if x.pol.Hidden(x.rp.Join(e.Name)) {
			continue // like ls: what the policy hides is not listed
		}
		if limit > 0 && int64(len(names)) == limit {
			truncated = true
			break
		}
		n := e.Name
		if e.Node.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	x.b.Entries = &names
	x.b.Message = fmt.Sprintf("Listed %d entries in %s", len(names), x.rp.Rel())
	if truncated {
		x.b.Truncated = &truncated
		x.b.Message += fmt.Sprintf(" (truncated at %d, the most the %s policy lists at once; list its subdirectories)", limit, x.pol.Name)
	}
	return nil
}

func (x *exec) delete() error {
	n, ok, err := x.env.Session.Tree().Lookup(x.rp)
	switch {
	case err != nil:
		return err // an unreadable directory is OSError, never "no such file"
	case !ok:
		return notFound(x.rp)
	case n.IsDir():
		return &toolError{typ: errIsDir, msg: fmt.Sprintf("Is a directory: '%s'; delete removes files only", x.rp.Rel())}
	}
	if _, err := x.tool("delete_file", map[string]any{"path": string(x.rp)}); err != nil {
		return err
	}
	x.b.Message = "Deleted file: " + x.echo()
	return nil
}

func (x *exec) exists() error {
	n, ok, err := x.env.Session.Tree().Lookup(x.rp)
	if err != nil {
		return err // unreadable: OSError, not exists=false
	}
	x.b.Exists = &ok
	switch {
	case !ok:
		x.b.Message = "Path does not exist: " + x.echo()
	case n.IsDir():
		x.b.Message = "Directory exists: " + x.echo()
	default:
		x.b.Message = "File exists: " + x.echo()
	}
	return nil
}

func (x *exec) mkdir() error {
	createDirs := x.p.CreateDirs == nil || *x.p.CreateDirs
	tree := x.env.Session.Tree()
	n, ok, err := tree.Lookup(x.rp)
	if err != nil {
		return err
	}
	if ok {
		if n.IsDir() {
			x.b.Message = "Directory already exists: " + x.echo()
			return nil
		}
		return &toolError{typ: errExists, msg: fmt.Sprintf("File exists: '%s' is a file, so no directory can be created there", x.rp.Rel())}
	}
	if !createDirs {
		if err := parentExists(tree, x.rp); err != nil {
			return err
		}
	}
	if _, err := x.tool("mkdir", map[string]any{"path": string(x.rp), "parents": createDirs}); err != nil {
		return err
	}
	x.b.Message = "Created directory: " + x.echo()
	return nil
}

// tool runs one of vfsd's tools on the session, under its policy: the
// write caps, the session's byte and file caps and the engine's atomic
// mutations are theirs.
func (x *exec) tool(name string, args map[string]any) (*tools.Response, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode %s arguments: %w", name, err)
	}
	resp := x.env.Tools.Call(x.ctx, x.env.Tools.Session().ID(), name, raw)
	if resp.OK() {
		return resp, nil
	}
	f, ok := resp.Receipt.(*tools.FailureReceipt)
	if !ok {
		return nil, &toolError{typ: errOS, msg: name + " failed"}
	}
	msg := f.SummaryText
	if i := strings.Index(msg, "; "); i > 0 {
		msg = msg[:i] // vfsd's advice names vfsd's tools; pos_filesystem's follows
	}
	typ := typeOfCode(string(f.ErrorCode))
	return nil, &toolError{typ: typ, msg: msg + hint(typ)}
}

func notFound(p vfs.Path) error {
	return &toolError{typ: errNotFound, msg: fmt.Sprintf(
		"No such file or directory: '%s'; list its directory (action \"list\") to see what exists", p.Rel())}
}

// codeTypes maps vfsd's error codes (the engine's and the tools') to the
// Python exception types the document's error_type names.
var codeTypes = map[string]string{
	"not_found":                 errNotFound,
	"already_exists":            errExists,
	"not_directory":             errNotDir,
	"is_directory":              errIsDir,
	"forbidden":                 errPermission,
	"not_permitted":             errPermission,
	"session_mismatch":          errPermission,
	"invalid_path":              errValue,
	"invalid_input":             errValue,
	"unknown_tool":              errValue,
	"too_large":                 errOS, // EFBIG/ENOSPC/EDQUOT: Python raises OSError
	"inline_required_too_large": errOS,
	"no_space":                  errOS,
	"not_empty":                 errOS,
	"directory_not_empty":       errOS,
}

func typeOfCode(code string) string {
	if t, ok := codeTypes[code]; ok {
		return t
	}
	return errOS
}

// hint is what to do after a failure of a vfsd tool, in pos_filesystem's
// words.
func hint(typ string) string {
	switch typ {
	case errNotFound:
		return "; list the parent directory (action \"list\") to see what exists"
	case errPermission:
		return "; the workspace's policy forbids it"
	case errOS:
		return "; write less, or delete files the workspace no longer needs"
	}
	return ""
}

// failBody fills b from err.
func failBody(b *Body, err error) {
	var te *toolError
	if !errors.As(err, &te) {
		var ve *vfs.Error
		if errors.As(err, &ve) {
			te = &toolError{typ: typeOfCode(string(ve.Code)), msg: ve.Error()}
		} else {
			te = &toolError{typ: errOS, msg: err.Error()}
		}
	}
	b.Success = false
	b.Message = te.msg
	b.Content, b.Exists, b.Entries, b.SizeBytes, b.Lines, b.Truncated = nil, nil, nil, nil, nil, nil
	b.Error, b.ErrorType = &te.msg, &te.typ
}

// render turns a body into the contract's result: the JSON object, and
// the same JSON as the text a model sees ("All operations return
// structured JSON (not text)").
func render(b *Body) contract.Result {
	var buf bytes.Buffer
	if b.Content != nil {
		buf.Grow(len(*b.Content) + len(*b.Content)/8 + 512) // one allocation for a large read
	}
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(b) // plain data: cannot fail
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	r := contract.Result{Body: json.RawMessage(body), Text: string(body), Status: "ok"}
	if !b.Success {
		r.Status, r.IsError = *b.ErrorType, true
	}
	return r
}

// commas renders n with thousands separators, as the document's
// "Wrote 1,234 bytes" does.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// mbWords renders a size in MB (MiB, as max_size_mb counts them).
func mbWords(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
