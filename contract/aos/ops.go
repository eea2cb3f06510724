package aos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/edit"
	"github.com/vfsd/vfsd/tools/search"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// call is one effect call being run.
type call struct {
	ctx    context.Context
	env    *contract.Env
	effect string
	p      *Params
	refs   []string // blob refs the receipt depends on
	note   string   // appended to the text (ignored parameters)
}

// fault is a failed call: the receipt's status and error_code, and a
// message for the model.
type fault struct {
	status, code, msg string
}

func (f *fault) Error() string { return f.code + ": " + f.msg }

func faultf(status, code, format string, args ...any) *fault {
	return &fault{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// run runs one effect and returns its result and the blob refs its
// receipt holds.
func (c *Contract) run(ctx context.Context, env *contract.Env, effect string, raw json.RawMessage) (contract.Result, []string) {
	k := &call{ctx: ctx, env: env, effect: effect}
	p, err := DecodeParams(raw)
	if err != nil {
		return k.failed(toFault(err)), nil
	}
	k.p = p
	if len(p.Unknown) > 0 {
		k.note = fmt.Sprintf("\n[ignored parameters no AOS document names: %s]", strings.Join(p.Unknown, ", "))
	}
	if p.SessionID != nil && *p.SessionID != "" && *p.SessionID != env.SessionID {
		return k.failed(faultf("error", "session_not_found",
			"session %q is not this call's session (%s): a call runs on the session it is bound to; leave session_id out or pass %q", *p.SessionID, env.SessionID, env.SessionID)), nil
	}
	if env.Policy != nil && !env.Policy.Allows(vfsdOps[effect]) {
		return k.failed(faultf("forbidden", "fs_op_not_allowed", "host fs operation %s is not allowed by this session's capability (allowed_fs_ops)", effect)), nil
	}
	var (
		body any
		text string
	)
	switch effect {
	case "read_file":
		body, text, err = k.readFile()
	case "write_file":
		body, text, err = k.writeFile()
	case "edit_file":
		body, text, err = k.editFile()
	case "apply_patch":
		body, text, err = k.applyPatch()
	case "grep":
		body, text, err = k.grep()
	case "glob":
		body, text, err = k.glob()
	case "stat":
		body, text, err = k.stat()
	case "exists":
		body, text, err = k.exists()
	case "list_dir":
		body, text, err = k.listDir()
	}
	if err != nil {
		return k.failed(toFault(err)), nil
	}
	return result(body, "ok", text+k.note), k.refs
}

// toFault classifies an error.
func toFault(err error) *fault {
	var f *fault
	var pe *ParamError
	switch {
	case errors.As(err, &f):
		return f
	case errors.As(err, &pe):
		return &fault{status: "error", code: pe.Code, msg: pe.Msg}
	}
	return &fault{status: "error", code: "internal", msg: err.Error()}
}

// failed is the effect's receipt for a failure.
func (k *call) failed(f *fault) contract.Result {
	var body any
	switch k.effect {
	case "read_file":
		body = &ReadFileReceipt{Status: f.status, ErrorCode: f.code}
	case "write_file":
		body = &WriteFileReceipt{Status: f.status, ErrorCode: f.code}
	case "edit_file":
		body = &EditFileReceipt{Status: f.status, Replacements: ptr(0), Applied: ptr(false), ErrorCode: f.code}
	case "apply_patch":
		body = &ApplyPatchReceipt{Status: f.status, FilesChanged: ptr(0), Ops: &PatchOps{}, Errors: []string{f.msg}, ErrorCode: f.code}
	case "grep":
		body = &GrepReceipt{Status: f.status, ErrorCode: f.code}
	case "glob":
		body = &GlobReceipt{Status: f.status, ErrorCode: f.code}
	case "stat":
		body = &StatReceipt{Status: f.status, ErrorCode: f.code}
	case "exists":
		body = &ExistsReceipt{Status: f.status, ErrorCode: f.code}
	case "list_dir":
		body = &ListDirReceipt{Status: f.status, ErrorCode: f.code}
	default:
		body = &ErrorReceipt{Status: f.status, ErrorCode: f.code}
	}
	return result(body, f.status, f.msg+k.note)
}

// caps are the session's policy caps.
func (k *call) caps() policy.Caps {
	if k.env.Policy == nil {
		return policy.Caps{}
	}
	return k.env.Policy.Caps
}

// tool runs one of vfsd's own tools on the session.
func (k *call) tool(name string, args map[string]any) (any, *fault) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, &fault{status: "error", code: "internal", msg: err.Error()}
	}
	resp := k.env.Tools.Call(k.ctx, k.env.Tools.Session().ID(), name, raw)
	if fr, ok := resp.Receipt.(*tools.FailureReceipt); ok {
		return fr, k.vfsdFault(fr.ErrorCode, fr.SummaryText, fr.Details)
	}
	return resp.Receipt, nil
}

// vfsdFault maps a vfsd failure onto the effect's statuses and the AOS
// error codes.
func (k *call) vfsdFault(code tools.Code, msg string, d tools.Details) *fault {
	caps := k.caps()
	f := &fault{status: "error", code: string(code), msg: msg}
	switch code {
	case tools.CodeForbidden:
		f.status = "forbidden"
	case tools.CodeNotFound:
		switch k.effect {
		case "write_file":
			f.code = "parent_not_found"
		case "apply_patch", "read_file", "grep", "glob", "stat", "list_dir":
			f.status = "not_found"
		case "edit_file":
			f.status, f.code = "not_found", "path_not_found"
		}
	case tools.CodeIsDirectory:
		if k.effect == "read_file" {
			f.status = "is_directory"
		}
	case tools.CodeAlreadyExists:
		switch k.effect {
		case "write_file":
			f.status, f.code = "conflict", "file_exists"
		case "apply_patch":
			f.status, f.code = "reject", "add_target_exists"
		}
	case tools.CodeConflict:
		if k.effect == "write_file" {
			f.status = "conflict"
		}
	case tools.CodeInvalidInput, tools.CodeEmptyOldString:
		f.code = "invalid_params"
		if code == tools.CodeEmptyOldString {
			f.code = string(code)
		}
	case tools.CodeInvalidRegex:
		f.status = "invalid_regex"
	case tools.CodeInvalidPattern:
		f.status = "invalid_pattern"
	case tools.CodeParseError:
		f.status, f.code = "parse_error", "patch_parse_error"
	case tools.CodeReject:
		f.status, f.code = "reject", "hunk_rejected"
	case tools.CodeSessionMismatch:
		f.code = "session_not_found"
	case tools.CodeInternal:
		f.code = "internal"
	case tools.CodeTooLarge:
		for _, c := range []struct {
			limit int64
			code  string
		}{{caps.MaxWriteBytes, "max_write_bytes_exceeded"}, {caps.MaxPatchBytes, "max_patch_bytes_exceeded"},
			{caps.MaxChangedFiles, "max_changed_files_exceeded"}, {caps.MaxEditReplacements, "max_edit_replacements_exceeded"}} {
			if c.limit > 0 && d.Limit == c.limit {
				f.status, f.code = "forbidden", c.code
				break
			}
		}
	}
	return f
}

// checkPath refuses a path outside the session's fs_roots before anything
// runs, as the capability enforcer does (error_code path_not_allowed).
func (k *call) checkPath(raw string, write bool) error {
	if k.env.Policy == nil {
		return nil
	}
	p, err := vfs.ParsePath(raw)
	if err != nil {
		return nil // the tools report the path itself
	}
	a := vfs.AccessRead
	if write {
		a = vfs.AccessWrite
	}
	if err := k.env.Policy.Check(a, p); err != nil {
		return faultf("forbidden", "path_not_allowed", "path %q is not allowed by this session's capability: %v", raw, messageOf(err))
	}
	return nil
}

func messageOf(err error) string {
	var ve *vfs.Error
	if errors.As(err, &ve) && ve.Msg != "" {
		return ve.Msg
	}
	return err.Error()
}

// requirePath returns the path parameter, canonicalised (canonical), or
// the default when it is optional.
func (k *call) requirePath(def string) (string, error) {
	if k.p.Path == nil || *k.p.Path == "" {
		if def != "" {
			return def, nil
		}
		return "", paramErr("path is required: a path in the session, such as \"src/main.rs\" (file_path is accepted too)")
	}
	return k.canonical(*k.p.Path)
}

// resolvePath resolves a path as vfsd's tools do (policy, symlinks).
func (k *call) resolvePath(raw string, write bool) (vfs.Path, error) {
	if err := k.checkPath(raw, write); err != nil {
		return "", err
	}
	p, err := k.env.Tools.ResolvePath("path", raw, write, true)
	if err != nil {
		var f *tools.Failure
		if errors.As(err, &f) {
			var d tools.Details
			if dd, ok := f.Details.(*tools.Details); ok && dd != nil {
				d = *dd
			}
			return "", k.vfsdFault(f.Code, f.Msg, d)
		}
		return "", err
	}
	return p, nil
}

// engineFault maps an engine error.
func (k *call) engineFault(err error) error {
	f := tools.FailureOf(err)
	var d tools.Details
	if dd, ok := f.Details.(*tools.Details); ok && dd != nil {
		d = *dd
	}
	return k.vfsdFault(f.Code, f.Msg, d)
}

// outputMode returns the output_mode parameter.
func (k *call) outputMode() (string, error) {
	if k.p.OutputMode == nil || *k.p.OutputMode == "" {
		return "auto", nil
	}
	switch m := *k.p.OutputMode; m {
	case "auto", "require_inline":
		return m, nil
	default:
		return "", faultf("error", "invalid_output_mode", "output_mode must be auto or require_inline, not %q", m)
	}
}

// materialize returns data as an inline payload when it fits the inline
// limit, else as a blob (auto) or a failure (require_inline), per the
// document's output_mode contract.
func (k *call) materialize(data []byte, asText bool, mode string) (*Output, error) {
	limit := k.env.Tools.InlineBytes()
	if int64(len(data)) <= limit {
		if asText {
			return &Output{InlineText: &InlineText{Text: string(data)}}, nil
		}
		return &Output{InlineBytes: &InlineBytes{Bytes: data}}, nil
	}
	if mode == "require_inline" || k.env.Blobs == nil {
		return nil, faultf("error", "inline_required_too_large",
			"the output is %d bytes, over the inline limit of %d; narrow the request, or use output_mode auto to get a blob", len(data), limit)
	}
	h, size, unpin, err := k.env.Blobs.Put(k.ctx, bytes.NewReader(data), true)
	if err != nil {
		return nil, fmt.Errorf("store the output: %w", err)
	}
	unpin()
	ref := tools.BlobRefPrefix + h.String()
	k.refs = append(k.refs, ref)
	return &Output{Blob: &Blob{BlobRef: ref, SizeBytes: size, PreviewBytes: data[:min(len(data), previewBytes)]}}, nil
}

// previewBytes is how much of a blob preview_bytes holds.
const previewBytes = 512

// blobHead reads the first previewBytes of a blob.
func blobHead(ctx context.Context, env *contract.Env, ref string) []byte {
	if env.Blobs == nil {
		return nil
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix))
	if err != nil {
		return nil
	}
	b, err := env.Blobs.Open(ctx, h)
	if err != nil {
		return nil
	}
	defer b.Close()
	buf := make([]byte, min(b.Size(), previewBytes))
	n, _ := b.ReadAt(buf, 0)
	return buf[:n]
}

// blobExists reports whether the store still holds ref.
func blobExists(ctx context.Context, env *contract.Env, ref string) bool {
	if env.Blobs == nil {
		return false
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix))
	if err != nil {
		return false
	}
	b, err := env.Blobs.Open(ctx, h)
	if err != nil {
		return false
	}
	b.Close()
	return true
}

func (k *call) readFile() (any, string, error) {
	raw, err := k.requirePath("")
	if err != nil {
		return nil, "", err
	}
	mode, err := k.outputMode()
	if err != nil {
		return nil, "", err
	}
	enc := "utf8"
	if k.p.Encoding != nil && *k.p.Encoding != "" {
		enc = *k.p.Encoding
	}
	if enc != "utf8" && enc != "bytes" {
		return nil, "", faultf("error", "invalid_encoding", "encoding must be utf8 or bytes, not %q", enc)
	}
	if err := k.checkPath(raw, false); err != nil {
		return nil, "", err
	}
	// A byte range from 0 (not vfsd's default page of lines): AOS reads
	// the whole file, or a blob when it is over the inline limit.
	args := map[string]any{"path": raw, "output_mode": mode, "offset_bytes": 0}
	if k.p.OffsetBytes != nil {
		args["offset_bytes"] = *k.p.OffsetBytes
	}
	if k.p.MaxBytes != nil {
		if *k.p.MaxBytes == 0 {
			return nil, "", paramErr("max_bytes (limit) must be at least 1")
		}
		args["max_bytes"] = *k.p.MaxBytes
	}
	if enc == "bytes" {
		args["encoding"] = "bytes"
	}
	rec, f := k.tool("read_file", args)
	if f != nil {
		if f.code == string(tools.CodeInlineRequiredTooLarge) {
			f.status = "error"
		}
		return nil, "", f
	}
	r := rec.(*tools.ReadFileReceipt)
	if enc == "utf8" && r.Encoding == "binary" && r.Blob == nil && mode == "auto" {
		// "For large or non-inline-safe payloads, return blob
		// deterministically": bytes that are not UTF-8 text are not
		// inline-safe as text. Under require_inline they stay inline, as
		// inline_bytes (below).
		data := r.InlineBytes
		if r.InlineText != nil {
			data = []byte(*r.InlineText)
		}
		if err := k.toBlob(r, data); err != nil {
			return nil, "", err
		}
	}
	out := &ReadFileReceipt{Status: "ok", Truncated: ptr(r.Truncated), SizeBytes: ptr(r.SizeBytes)}
	text := ""
	switch {
	case r.Blob != nil:
		out.Content = &Output{Blob: &Blob{BlobRef: r.Blob.BlobRef, SizeBytes: r.Blob.SizeBytes, PreviewBytes: blobHead(k.ctx, k.env, r.Blob.BlobRef)}}
		k.refs = append(k.refs, r.Blob.BlobRef)
		text = fmt.Sprintf("%s\n[... %d bytes in blob %s]", r.Blob.Preview, r.Blob.SizeBytes, r.Blob.BlobRef)
	case r.InlineText != nil && enc == "utf8" && r.Encoding != "binary":
		out.Content = &Output{InlineText: &InlineText{Text: *r.InlineText}}
		text = *r.InlineText
	case r.InlineText != nil:
		out.Content = &Output{InlineBytes: &InlineBytes{Bytes: []byte(*r.InlineText)}}
		text = fmt.Sprintf("[%d bytes, base64 in content.inline_bytes.bytes]", len(*r.InlineText))
	default:
		out.Content = &Output{InlineBytes: &InlineBytes{Bytes: r.InlineBytes}}
		text = fmt.Sprintf("[%d bytes, base64 in content.inline_bytes.bytes]", len(r.InlineBytes))
	}
	if r.Truncated {
		text += fmt.Sprintf("\n[... truncated: %d of %d bytes from offset %d; read on with offset_bytes]", readLen(out.Content), r.SizeBytes, r.OffsetBytes)
	}
	return out, text, nil
}

// toBlob stores data, the inline window a read returned, as a blob and
// makes r return it so.
func (k *call) toBlob(r *tools.ReadFileReceipt, data []byte) error {
	if k.env.Blobs == nil {
		return faultf("error", "inline_required_too_large", "%s is not UTF-8 text, and this session has no blob store to return it in; read it with encoding bytes", r.Path)
	}
	h, size, unpin, err := k.env.Blobs.Put(k.ctx, bytes.NewReader(data), true)
	if err != nil {
		return fmt.Errorf("store %s's content: %w", r.Path, err)
	}
	unpin()
	r.Blob = &tools.BlobInfo{BlobRef: tools.BlobRefPrefix + h.String(), SizeBytes: size, Preview: fmt.Sprintf("[%d bytes that are not UTF-8 text]", size)}
	r.InlineText, r.InlineBytes = nil, nil
	return nil
}

func readLen(o *Output) int64 {
	switch {
	case o.Blob != nil:
		return o.Blob.SizeBytes
	case o.InlineText != nil:
		return int64(len(o.InlineText.Text))
	}
	return int64(len(o.InlineBytes.Bytes))
}

func (k *call) writeFile() (any, string, error) {
	raw, err := k.requirePath("")
	if err != nil {
		return nil, "", err
	}
	content, err := DecodeContent(k.p.Content)
	if err != nil {
		return nil, "", err
	}
	mode := "overwrite"
	if k.p.Mode != nil && *k.p.Mode != "" {
		mode = *k.p.Mode
	}
	// overwrite replaces the file or creates it (vfsd's create);
	// create_new only creates.
	vmode := map[string]string{"overwrite": "create", "create_new": "create_new"}[mode]
	if vmode == "" {
		return nil, "", faultf("error", "invalid_mode", "mode must be overwrite or create_new, not %q", mode)
	}
	if err := k.checkPath(raw, true); err != nil {
		return nil, "", err
	}
	args := map[string]any{"path": raw, "mode": vmode, "create_parents": k.p.CreateParents != nil && *k.p.CreateParents}
	size := int64(-1)
	switch {
	case content.Text != nil:
		args["inline_text"], size = *content.Text, int64(len(*content.Text))
	case content.Bytes != nil:
		args["inline_bytes"], size = content.Bytes, int64(len(content.Bytes))
	default:
		args["blob_ref"] = content.BlobRef
	}
	if limit := k.caps().MaxWriteBytes; limit > 0 && size > limit {
		return nil, "", faultf("forbidden", "max_write_bytes_exceeded", "content size %d exceeds max_write_bytes %d", size, limit)
	}
	rec, f := k.tool("write_file", args)
	if f != nil {
		return nil, "", f
	}
	r := rec.(*tools.WriteFileReceipt)
	out := &WriteFileReceipt{Status: "ok", WrittenBytes: ptr(r.WrittenBytes), Created: ptr(r.Created)}
	if p, err := vfs.ParsePath(r.Path); err == nil {
		if n, err := k.env.Session.Stat(k.ctx, p); err == nil {
			out.NewMtimeNs = ptr(n.Mtime)
		}
	}
	verb := "Wrote"
	if r.Created {
		verb = "Created"
	}
	return out, fmt.Sprintf("%s %s (%d bytes)", verb, r.Path, r.WrittenBytes), nil
}

func (k *call) editFile() (any, string, error) {
	raw, err := k.requirePath("")
	if err != nil {
		return nil, "", err
	}
	switch {
	case k.p.OldString == nil:
		return nil, "", paramErr("old_string is required (non-empty): the text to replace")
	case *k.p.OldString == "":
		return nil, "", faultf("error", "invalid_input_empty_old_string", "old_string is empty; give the exact text to replace (use host.fs.write_file to create or overwrite a file)")
	case k.p.NewString == nil:
		return nil, "", paramErr("new_string is required (an empty string deletes old_string)")
	}
	old, repl := *k.p.OldString, *k.p.NewString
	all := k.p.ReplaceAll != nil && *k.p.ReplaceAll
	path, err := k.resolvePath(raw, true)
	if err != nil {
		return nil, "", err
	}
	caps := k.caps()
	lim := edit.Limits{
		MaxBytes:        int(policy.Clamp(tools.MaxEditBytes, caps.MaxWriteBytes)),
		MaxReplacements: int(policy.Clamp(tools.MaxEditReplacements, caps.MaxEditReplacements)),
	}
	n, err := k.env.Session.Stat(k.ctx, path)
	if err != nil {
		return nil, "", k.engineFault(err)
	}
	if n.IsDir() {
		return nil, "", faultf("error", "is_directory", "%s is a directory; edit a file in it", path.Rel())
	}
	if n.Size > int64(lim.MaxBytes) {
		return nil, "", faultf("error", "too_large", "%s is %d bytes, over the %d an edit holds in memory; write it with host.fs.write_file", path.Rel(), n.Size, lim.MaxBytes)
	}
	data, n, err := k.env.Session.ReadFile(k.ctx, path)
	if err != nil {
		return nil, "", k.engineFault(err)
	}
	if n.Encoding == vfs.EncodingBinary || vfs.DetectEncoding(data) == vfs.EncodingBinary {
		return nil, "", faultf("error", "invalid_utf8", "%s is not UTF-8 text; edit_file works on text (use host.fs.write_file to replace it)", path.Rel())
	}
	content := string(data)
	newContent, count, err := editContent(content, old, repl, all, lim)
	if err != nil {
		return nil, "", k.editFault(path, err)
	}
	if newContent != content {
		if limit := caps.MaxSessionBytes; limit > 0 {
			if total := k.env.Session.Info().Bytes + int64(len(newContent)-len(content)); total > limit {
				return nil, "", faultf("error", "too_large", "the session would hold %d bytes, over its limit of %d", total, limit)
			}
		}
		v := n.Version
		if _, err := k.env.Session.WriteFile(k.ctx, path, strings.NewReader(newContent), vfs.WriteOptions{Mode: vfs.WriteOverwrite, ExpectedVersion: &v}); err != nil {
			return nil, "", k.engineFault(err)
		}
	}
	noun := "replacements"
	if count == 1 {
		noun = "replacement"
	}
	summary := fmt.Sprintf("Updated %s (%d %s)", path.Rel(), count, noun)
	return &EditFileReceipt{Status: "ok", Replacements: ptr(count), Applied: ptr(true), SummaryText: summary}, summary, nil
}

// errAmbiguous and errNotFound are editContent's match failures.
type editMatchError struct {
	ambiguous bool
	count     int
	lines     []int
	closest   *edit.Region
}

func (e *editMatchError) Error() string { return "edit match" }

// editContent applies one edit by the document's match strategy: exact
// first, then the fuzzy stages (vfsd's line passes, then FuzzyFind).
// It returns the new content and the number of replacements.
func editContent(content, old, repl string, all bool, lim edit.Limits) (string, int, error) {
	if toLF(old) == toLF(repl) {
		// Nothing would change: count the matches, write nothing.
		n := strings.Count(toLF(content), toLF(old))
		if n == 0 {
			n = len(FuzzyFind(content, old))
		}
		switch {
		case n == 0:
			return "", 0, &editMatchError{}
		case n > 1 && !all:
			return "", 0, &editMatchError{ambiguous: true, count: n}
		case !all:
			n = 1
		}
		return content, n, nil
	}
	res, err := edit.ApplyLimited(content, []edit.Edit{{Old: old, New: repl, ReplaceAll: all}}, lim)
	if err == nil {
		return res.Content, res.Replacements, nil
	}
	var nf *edit.NotFoundError
	var amb *edit.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return "", 0, &editMatchError{ambiguous: true, count: amb.Total(), lines: amb.Lines}
	case !errors.As(err, &nf):
		return "", 0, err
	}
	if len(content) > maxFuzzyBytes {
		return "", 0, &editMatchError{closest: nf.Closest}
	}
	spans := FuzzyFind(content, old)
	switch {
	case len(spans) == 0:
		return "", 0, &editMatchError{closest: nf.Closest}
	case len(spans) > 1 && !all:
		lines := make([]int, len(spans))
		for i, s := range spans {
			lines[i] = edit.LineOf(content, s.Start)
		}
		return "", 0, &editMatchError{ambiguous: true, count: len(spans), lines: lines}
	case lim.MaxReplacements > 0 && len(spans) > lim.MaxReplacements:
		return "", 0, &edit.TooManyError{Count: len(spans), Limit: lim.MaxReplacements}
	}
	out := FuzzyReplace(content, spans, old, repl)
	if lim.MaxBytes > 0 && len(out) > lim.MaxBytes {
		return "", 0, &edit.TooLargeError{Size: int64(len(out)), Limit: int64(lim.MaxBytes)}
	}
	return out, len(spans), nil
}

// editFault maps editContent's errors.
func (k *call) editFault(path vfs.Path, err error) error {
	var me *editMatchError
	var tm *edit.TooManyError
	var tl *edit.TooLargeError
	caps := k.caps()
	switch {
	case errors.As(err, &me) && me.ambiguous:
		where := ""
		if len(me.lines) > 0 {
			where = " (lines " + joinInts(me.lines[:min(len(me.lines), 20)]) + ")"
		}
		return faultf("ambiguous", "ambiguous_matches", "old_string matches %d places in %s%s; add surrounding lines to make it unique, or set replace_all", me.count, path.Rel(), where)
	case errors.As(err, &me):
		msg := fmt.Sprintf("old_string was not found in %s, exactly or ignoring whitespace and typographic quotes/dashes", path.Rel())
		if c := me.closest; c != nil {
			msg += fmt.Sprintf("; the most similar text is at lines %d-%d:\n%s", c.StartLine, c.EndLine, clip(c.Text, 2000))
		}
		return faultf("not_found", "edit_target_not_found", "%s", msg)
	case errors.As(err, &tm):
		if caps.MaxEditReplacements > 0 && int64(tm.Limit) == caps.MaxEditReplacements {
			return faultf("forbidden", "max_edit_replacements_exceeded", "old_string matches %d places, over max_edit_replacements %d", tm.Count, tm.Limit)
		}
		return faultf("error", "too_large", "old_string matches %d places, over the %d one edit may replace; narrow old_string", tm.Count, tm.Limit)
	case errors.As(err, &tl):
		if caps.MaxWriteBytes > 0 && tl.Limit == caps.MaxWriteBytes {
			return faultf("forbidden", "max_write_bytes_exceeded", "the edited file would be %d bytes, over max_write_bytes %d", tl.Size, tl.Limit)
		}
		return faultf("error", "too_large", "the edited file would be %d bytes, over the %d an edit may build; write it with host.fs.write_file", tl.Size, tl.Limit)
	}
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n[...]"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func (k *call) applyPatch() (any, string, error) {
	format := "v4a"
	if k.p.PatchFormat != nil && *k.p.PatchFormat != "" {
		format = *k.p.PatchFormat
	}
	if !strings.EqualFold(format, "v4a") {
		return nil, "", faultf("error", "unsupported_patch_format", "patch_format %q is not supported; the one format is v4a (*** Begin Patch ... *** End Patch)", format)
	}
	in, err := DecodePatch(k.p)
	if err != nil {
		return nil, "", err
	}
	args := map[string]any{"dry_run": k.p.DryRun != nil && *k.p.DryRun}
	if in.Text == nil {
		// A patch by reference is read here, so that its paths are
		// canonicalised as an inline patch's are.
		text, err := k.patchBlob(in.BlobRef)
		if err != nil {
			return nil, "", err
		}
		in.Text = text
	}
	if in.Text != nil {
		if strings.TrimSpace(*in.Text) == "" {
			return nil, "", faultf("error", "invalid_patch_empty", "patch must not be empty: give a V4A patch (*** Begin Patch ... *** End Patch)")
		}
		if limit := k.caps().MaxPatchBytes; limit > 0 && int64(len(*in.Text)) > limit {
			return nil, "", faultf("forbidden", "max_patch_bytes_exceeded", "patch size %d exceeds max_patch_bytes %d", len(*in.Text), limit)
		}
		text, err := k.canonicalPatch(*in.Text)
		if err != nil {
			return nil, "", err
		}
		args["patch"] = text
	} else {
		args["blob_ref"] = in.BlobRef
	}
	rec, f := k.tool("apply_patch", args)
	if f != nil {
		if f.status == "reject" && strings.Contains(f.msg, "does not exist") {
			f.status, f.code = "not_found", "update_target_not_found"
		}
		return nil, "", f
	}
	r := rec.(*tools.ApplyPatchReceipt)
	ops := PatchOps{Add: r.Ops.Add, Update: r.Ops.Update, Delete: r.Ops.Delete, Move: r.Ops.Move}
	paths := append([]string{}, r.ChangedPaths...)
	var b strings.Builder
	b.WriteString(r.SummaryText + "\n")
	for _, f := range r.Files {
		b.WriteString(f.Diff)
	}
	return &ApplyPatchReceipt{Status: "ok", FilesChanged: ptr(r.FilesChanged), ChangedPaths: &paths, Ops: &ops, SummaryText: r.SummaryText}, b.String(), nil
}

// maxPatchBlob is the most of a blob_ref patch the adapter reads to
// canonicalise its paths; a larger one goes to the patch tool as a
// reference, unchanged.
const maxPatchBlob = 64 << 20

// patchBlob returns the text of a blob_ref patch, or nil when the patch
// tool is to read it itself (too large to canonicalise here, or not UTF-8
// text: the tool reports it).
func (k *call) patchBlob(ref string) (*string, error) {
	if k.env.Blobs == nil {
		return nil, nil
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(ref, tools.BlobRefPrefix))
	if err != nil {
		return nil, nil // the tool words the bad reference
	}
	b, err := k.env.Blobs.Open(k.ctx, h)
	if err != nil {
		return nil, nil
	}
	defer b.Close()
	if b.Size() > maxPatchBlob {
		return nil, nil
	}
	buf := make([]byte, b.Size())
	if n, err := b.ReadAt(buf, 0); int64(n) < b.Size() {
		return nil, fmt.Errorf("read patch %s: %w", ref, err)
	}
	if !utf8.Valid(buf) {
		return nil, nil
	}
	text := string(buf)
	return &text, nil
}

// Result counts: the document's defaults (grep: "default 100"; glob and
// list_dir: "adapter default applies", AOS's adapters use 100), clamped to
// the capability's ceilings (effective = min(request, cap)).
const defaultResults = 100

// MaxResultsPerCall is the adapter's runtime safety bound on the results
// one grep, glob or list_dir returns, whatever the request and the
// capability: the document leaves an omitted limit "unbounded by
// capability policy (subject only to adapter/runtime safety behavior)".
// A result cut here is truncated, with its full count, like one cut by
// max_results. 100,000 grep lines of at most 2,000 bytes each bound one
// call's memory to about 200 MB.
const MaxResultsPerCall = 100_000

// cutHint says what to do about a result cut at limit results.
func cutHint(limit int) string {
	if limit >= MaxResultsPerCall {
		return fmt.Sprintf("narrow the pattern or the path: one call returns at most %d results", MaxResultsPerCall)
	}
	return "narrow the pattern or raise max_results"
}

func (k *call) maxResults(capLimit int64) int {
	req := int64(defaultResults)
	if k.p.MaxResults != nil && *k.p.MaxResults > 0 {
		req = *k.p.MaxResults
	}
	return int(min(policy.Clamp(req, capLimit), MaxResultsPerCall))
}

// searchStart checks what grep and glob both start from: a pattern (example
// shows one in the error), the output mode, and the base path (default ".",
// which must exist).
func (k *call) searchStart(example string) (mode string, base vfs.Path, err error) {
	if k.p.Pattern == nil || *k.p.Pattern == "" {
		return "", "", paramErr("pattern is required: %s", example)
	}
	if mode, err = k.outputMode(); err != nil {
		return "", "", err
	}
	raw, err := k.requirePath(".")
	if err != nil {
		return "", "", err
	}
	if base, err = k.resolvePath(raw, false); err != nil {
		return "", "", err
	}
	if _, err := k.env.Session.Stat(k.ctx, base); err != nil {
		return "", "", k.engineFault(err)
	}
	return mode, base, nil
}

func (k *call) grep() (any, string, error) {
	mode, base, err := k.searchStart(`a regular expression such as "fn \w+"`)
	if err != nil {
		return nil, "", err
	}
	caps := k.caps()
	limit := k.maxResults(caps.MaxGrepResults)
	opts := search.GrepOptions{Pattern: *k.p.Pattern, Path: base, CaseInsensitive: k.p.CaseInsensitive != nil && *k.p.CaseInsensitive,
		MaxResults: limit, Hidden: k.env.Tools.HiddenFilter(), Engine: k.env.Tools.GrepEngine(),
		MaxFiles: caps.MaxScannedFiles, MaxBytes: caps.MaxScannedBytes}
	if k.p.GlobFilter != nil {
		opts.Glob = *k.p.GlobFilter
	}
	res, err := search.Grep(k.ctx, k.env.Session, opts)
	if err != nil {
		return nil, "", k.searchFault(err, true)
	}
	lines := make([]string, 0, len(res.Matches))
	for _, m := range res.Matches {
		lines = append(lines, fmt.Sprintf("%s:%d:%s", m.Path.Rel(), m.Line, m.Text))
	}
	total := len(lines)
	if res.Truncated {
		// match_count counts every match, not only the ones returned.
		opts.Output, opts.MaxResults = search.OutputCount, 0
		if all, err := search.Grep(k.ctx, k.env.Session, opts); err == nil {
			total = 0
			for _, f := range all.Files {
				total += f.Count
			}
		}
	}
	text := strings.Join(lines, "\n")
	out, err := k.materialize([]byte(text), true, mode)
	if err != nil {
		return nil, "", err
	}
	summary := "No matches found"
	if total > 0 {
		summary = fmt.Sprintf("%d match(es)", total)
	}
	view := text
	if out.Blob != nil {
		view = clip(text, previewBytes) + fmt.Sprintf("\n[... %d bytes in blob %s]", out.Blob.SizeBytes, out.Blob.BlobRef)
	}
	if total == 0 {
		view = summary
	} else if res.Truncated {
		view += fmt.Sprintf("\n[... %d of %d matches shown; %s]", len(lines), total, cutHint(limit))
	}
	return &GrepReceipt{Status: "ok", Matches: out, MatchCount: ptr(total), Truncated: ptr(res.Truncated), SummaryText: summary}, view, nil
}

// searchFault maps the search engine's errors.
func (k *call) searchFault(err error, grep bool) error {
	var pe *search.PatternError
	var le *search.ScanLimitError
	switch {
	case errors.As(err, &pe) && pe.Kind == search.KindInvalidRegex:
		return faultf("invalid_regex", "invalid_regex", "%s; fix the pattern", pe.Error())
	case errors.As(err, &pe) && grep:
		return faultf("error", "invalid_glob_filter", "%s; fix glob_filter", pe.Error())
	case errors.As(err, &pe):
		return faultf("invalid_pattern", "invalid_pattern", "%s; fix the pattern", pe.Error())
	case errors.As(err, &le):
		return faultf("forbidden", "max_scan_"+le.What+"_exceeded", "%s", le.Error())
	}
	return k.engineFault(err)
}

func (k *call) glob() (any, string, error) {
	mode, base, err := k.searchStart(`a glob such as "**/*.ts"`)
	if err != nil {
		return nil, "", err
	}
	limit := k.maxResults(k.caps().MaxGlobResults)
	res, err := search.Glob(k.ctx, k.env.Session.Tree(), search.GlobOptions{
		Pattern: *k.p.Pattern, Base: base, Sort: search.SortByMtime, Hidden: k.env.Tools.HiddenFilter(),
		ReadFile: func(q vfs.Path) ([]byte, error) { data, _, err := k.env.Session.ReadFile(k.ctx, q); return data, err },
	})
	if err != nil {
		return nil, "", k.searchFault(err, false)
	}
	total := len(res.Entries)
	paths := make([]string, 0, min(total, limit))
	for _, e := range res.Entries[:min(total, limit)] {
		paths = append(paths, e.Path.Rel())
	}
	text := strings.Join(paths, "\n")
	out, err := k.materialize([]byte(text), true, mode)
	if err != nil {
		return nil, "", err
	}
	summary := "No files matched"
	if total > 0 {
		summary = fmt.Sprintf("%d path(s) matched", total)
	}
	view := text
	if total == 0 {
		view = summary
	} else if total > limit {
		view += fmt.Sprintf("\n[... %d of %d paths shown; %s]", limit, total, cutHint(limit))
	}
	return &GlobReceipt{Status: "ok", Paths: out, Count: ptr(total), Truncated: ptr(total > limit), SummaryText: summary}, view, nil
}

func (k *call) stat() (any, string, error) {
	raw, err := k.requirePath("")
	if err != nil {
		return nil, "", err
	}
	p, err := k.resolvePath(raw, false)
	if err != nil {
		return nil, "", err
	}
	n, err := k.env.Session.Stat(k.ctx, p)
	if errors.Is(err, vfs.ErrNotFound) {
		return nil, "", &fault{status: "not_found", code: "not_found", msg: fmt.Sprintf("%s does not exist", raw)}
	}
	if err != nil {
		return nil, "", k.engineFault(err)
	}
	kind := "file"
	if n.IsDir() {
		kind = "directory"
	}
	return &StatReceipt{Status: "ok", Exists: ptr(true), IsDir: ptr(n.IsDir()), SizeBytes: ptr(n.Size), MtimeNs: ptr(n.Mtime)},
		fmt.Sprintf("%s: %s, %d bytes", p.Rel(), kind, n.Size), nil
}

func (k *call) exists() (any, string, error) {
	raw, err := k.requirePath("")
	if err != nil {
		return nil, "", err
	}
	p, err := k.resolvePath(raw, false)
	if err != nil {
		return nil, "", err
	}
	_, err = k.env.Session.Stat(k.ctx, p)
	switch {
	case errors.Is(err, vfs.ErrNotFound), errors.Is(err, vfs.ErrNotDir):
		return &ExistsReceipt{Status: "ok", Exists: ptr(false)}, raw + " does not exist", nil
	case err != nil:
		return nil, "", k.engineFault(err)
	}
	return &ExistsReceipt{Status: "ok", Exists: ptr(true)}, raw + " exists", nil
}

func (k *call) listDir() (any, string, error) {
	mode, err := k.outputMode()
	if err != nil {
		return nil, "", err
	}
	raw, err := k.requirePath(".")
	if err != nil {
		return nil, "", err
	}
	p, err := k.resolvePath(raw, false)
	if err != nil {
		return nil, "", err
	}
	ents, err := k.env.Session.List(k.ctx, p)
	if err != nil {
		return nil, "", k.engineFault(err)
	}
	hidden := k.env.Tools.HiddenFilter()
	var names []string
	for _, e := range ents {
		child := p.Join(e.Name)
		if hidden(child, e.Node) {
			continue
		}
		name := e.Name
		if e.Node.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	limit := k.maxResults(k.caps().MaxGlobResults)
	total := len(names)
	text := strings.Join(names[:min(total, limit)], "\n")
	out, err := k.materialize([]byte(text), true, mode)
	if err != nil {
		return nil, "", err
	}
	noun := "entries"
	if total == 1 {
		noun = "entry"
	}
	summary := fmt.Sprintf("%d %s", total, noun)
	view := text
	if total == 0 {
		view = summary
	}
	return &ListDirReceipt{Status: "ok", Entries: out, Count: ptr(total), Truncated: ptr(total > limit), SummaryText: summary}, view, nil
}
