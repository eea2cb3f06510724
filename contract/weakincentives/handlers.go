package weakincentives

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs"
)

// ListDirectory are list_directory's parameters: "path: VfsPath | None =
// None  # None lists root".
type ListDirectory struct {
	Path *VfsPath `json:"path"`
}

// ListDirectoryResult is list_directory's result: "a JSON-serialisable
// summary with files and directories for the given path" — the names of
// the shallow entries, sorted.
type ListDirectoryResult struct {
	Path        VfsPath  `json:"path"`
	Directories []string `json:"directories"`
	Files       []string `json:"files"`
}

// ReadFile are read_file's parameters.
type ReadFile struct {
	Path *VfsPath `json:"path"`
}

// VfsFile is a file's metadata, as the document's VfsFile.
type VfsFile struct {
	Path VfsPath `json:"path"`
	// Encoding is "utf-8" or "binary" (null when not known yet, in State).
	Encoding  *string   `json:"encoding"`
	SizeBytes int64     `json:"size_bytes"`
	Version   uint64    `json:"version"`
	CreatedAt Timestamp `json:"created_at"`
	UpdatedAt Timestamp `json:"updated_at"`
}

// FileReadResult is read_file's result: "file metadata alongside raw
// bytes. Binary payloads are base64-encoded when serialised" — content is
// the text when file.encoding is "utf-8", base64 when it is "binary".
type FileReadResult struct {
	File    VfsFile `json:"file"`
	Content string  `json:"content"`
}

// WriteFile are write_file's parameters and its result (the document's
// write_file returns the normalised WriteFile).
type WriteFile struct {
	Path    *VfsPath `json:"path"`
	Content *string  `json:"content"`
	// Mode is create (the default: a new file), overwrite (an existing
	// file) or append (to an existing file).
	Mode string `json:"mode,omitempty"`
	// Encoding is the hint: "utf-8" (the default; content is text), or
	// "binary" (content is base64), or null (text).
	Encoding json.RawMessage `json:"encoding,omitempty"`
}

// writeFileResult is WriteFile as returned: every field present.
type writeFileResult struct {
	Path     VfsPath `json:"path"`
	Content  string  `json:"content"`
	Mode     string  `json:"mode"`
	Encoding *string `json:"encoding"`
}

// DeleteFile are delete_file's parameters and its result.
type DeleteFile struct {
	Path *VfsPath `json:"path"`
	// AllowMissing is the document's "(future extension)": succeed, doing
	// nothing, when nothing matches.
	AllowMissing bool `json:"allow_missing,omitempty"`
}

// deleteFileResult is DeleteFile as returned.
type deleteFileResult struct {
	Path VfsPath `json:"path"`
}

// Timestamp is a time as the document stores it: timezone-aware UTC,
// truncated to the millisecond, serialised as Python's isoformat does
// ("2026-01-02T03:04:05.123000+00:00", no fraction when it is zero).
type Timestamp time.Time

// MarshalJSON renders t as Python's datetime.isoformat().
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.String())
}

// String renders t as Python's datetime.isoformat().
func (t Timestamp) String() string {
	u := time.Time(t).UTC().Truncate(time.Millisecond)
	if u.Nanosecond() == 0 {
		return u.Format("2006-01-02T15:04:05") + "+00:00"
	}
	return u.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

const (
	encodingUTF8   = "utf-8"
	encodingBinary = "binary"
)

// call runs one of vfsd's tools on the session.
func call(ctx context.Context, env *contract.Env, tool string, params any) (*tools.Response, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return env.Tools.Call(ctx, env.SessionID, tool, raw), nil
}

// failed returns the code and message of a failed tools response.
func failed(r *tools.Response) (tools.Code, string) {
	if f, ok := r.Receipt.(*tools.FailureReceipt); ok {
		return f.ErrorCode, f.SummaryText
	}
	return tools.CodeInternal, r.Text
}

// sessionPath is the session path a tools receipt names ("." the root).
func sessionPath(display string) vfs.Path {
	if display == "." || display == "" {
		return vfs.Root
	}
	return vfs.Path(display)
}

// required normalises a path parameter that must name a file: "Path must
// reference a file or directory."
func required(env *contract.Env, p *VfsPath, what string) (VfsPath, error) {
	if p == nil {
		return VfsPath{}, invalid("path is required: the %s, as {\"segments\": [\"dir\", \"name\"]}.", what)
	}
	np, err := limitsOf(env.Tools.Policy()).normalize(*p)
	if err != nil {
		return VfsPath{}, err
	}
	if len(np.Segments) == 0 {
		return VfsPath{}, invalid("Path must reference a file or directory.")
	}
	return np, nil
}

// listDirectory: "Returns a JSON-serialisable summary with files and
// directories for the given path; raises if the path resolves to a file."
// "Directory listings render shallow entries only (files or immediate
// directories below the target path)." Directories are implicit: one that
// holds nothing lists empty.
func listDirectory(ctx context.Context, env *contract.Env, p *ListDirectory) (string, any, error) {
	target := VfsPath{Segments: []string{}}
	if p.Path != nil {
		np, err := limitsOf(env.Tools.Policy()).normalize(*p.Path)
		if err != nil {
			return "", nil, err
		}
		target = np
	}
	res := ListDirectoryResult{Path: target, Directories: []string{}, Files: []string{}}
	// vfsd's list_directory resolves the path under the session's policy
	// (symlinks, read roots); the entries come from the tree, unbounded.
	r, err := call(ctx, env, "list_directory", map[string]any{"path": target.String(), "max_entries": 1})
	if err != nil {
		return "", nil, err
	}
	if !r.OK() {
		switch code, msg := failed(r); code {
		case tools.CodeNotFound:
			return listMessage(res), res, nil
		case tools.CodeNotDirectory:
			return "", nil, invalid("Cannot list a file path; provide a directory. (%s is a file: read it with read_file.)", target)
		default:
			return "", nil, invalid("%s", msg)
		}
	}
	dir := sessionPath(r.Receipt.(*tools.ListDirectoryReceipt).Path)
	pol := env.Tools.Policy()
	err = env.Session.Tree().ChildrenErr(dir, func(name string, n vfs.Node) bool {
		if pol.Hidden(dir.Join(name)) {
			return true
		}
		if n.IsSymlink() {
			// As read_file sees it: what the link leads to, or nothing.
			t, ok := followLink(ctx, env, dir.Join(name))
			if !ok {
				return true
			}
			n = t
		}
		switch {
		case n.IsDir():
			res.Directories = append(res.Directories, name)
		case n.IsFile():
			res.Files = append(res.Files, name)
		} // a fifo, socket or device is no file read_file can read
		return true
	})
	if err != nil {
		// A directory the store cannot read is an error, never an
		// empty listing (an empty one is a real answer here).
		return "", nil, invalid("Cannot list %s: %v.", target, err)
	}
	return listMessage(res), res, nil
}

// followLink is what the symlink at p leads to, as the tools follow it
// under the session's policy (read_file follows it so): its node, and
// false when it leads nowhere the tools would read (missing, out of the
// session, a loop, not followed under the policy). The virtual filesystem
// has files and directories only: listings, the state and reads show a
// symlink as what it leads to, or not at all.
func followLink(ctx context.Context, env *contract.Env, p vfs.Path) (vfs.Node, bool) {
	q, err := env.Tools.ResolvePath("path", p.Rel(), false, true)
	if err != nil {
		return vfs.Node{}, false
	}
	n, err := env.Session.Stat(ctx, q)
	if err != nil || n.IsSymlink() || (!n.IsDir() && !n.IsFile()) {
		return vfs.Node{}, false
	}
	return n, true
}

func listMessage(r ListDirectoryResult) string {
	return fmt.Sprintf("Listed directory %s (%d %s, %d %s).", r.Path,
		len(r.Directories), plural(len(r.Directories), "subdir", "subdirs"), len(r.Files), plural(len(r.Files), "file", "files"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// readFile: "Returns file metadata alongside raw bytes. Binary payloads are
// base64-encoded when serialised. Raises if the path is missing."
func readFile(ctx context.Context, env *contract.Env, p *ReadFile) (string, any, error) {
	path, err := required(env, p.Path, "file to read")
	if err != nil {
		return "", nil, err
	}
	r, err := call(ctx, env, "read_file", map[string]any{"path": path.String(), "encoding": "bytes", "offset_bytes": 0})
	if err != nil {
		return "", nil, err
	}
	if !r.OK() {
		switch code, msg := failed(r); code {
		case tools.CodeNotFound:
			return "", nil, invalid("File does not exist in the virtual filesystem: %s. List its directory with list_directory to see what does.", path)
		case tools.CodeIsDirectory:
			return "", nil, invalid("File does not exist in the virtual filesystem: %s is a directory; list it with list_directory.", path)
		default:
			return "", nil, invalid("%s", msg)
		}
	}
	rr := r.Receipt.(*tools.ReadFileReceipt)
	if rr.Truncated {
		return "", nil, invalid("%s is %d bytes, more than one read returns; the virtual filesystem holds files of at most %d characters written through write_file.", path, rr.SizeBytes, limitsOf(env.Tools.Policy()).write)
	}
	data, err := payloadBytes(ctx, env, rr.Payload)
	if err != nil {
		return "", nil, err
	}
	n, err := env.Session.Stat(ctx, sessionPath(rr.Path))
	if err != nil {
		return "", nil, invalid("File does not exist in the virtual filesystem: %s (it changed while being read; read it again).", path)
	}
	enc := rr.Encoding
	file := VfsFile{Path: path, Encoding: &enc, SizeBytes: rr.SizeBytes, Version: rr.Version,
		CreatedAt: Timestamp(n.CreatedAt()), UpdatedAt: Timestamp(n.UpdatedAt())}
	content := string(data)
	if enc == encodingBinary {
		content = base64.StdEncoding.EncodeToString(data)
	}
	msg := fmt.Sprintf("Read file %s (%d bytes, %s, version %d).", path, rr.SizeBytes, enc, rr.Version)
	return msg, FileReadResult{File: file, Content: content}, nil
}

// payloadBytes returns a tools payload's content: inline, or from the blob
// a large read went to.
func payloadBytes(ctx context.Context, env *contract.Env, pl tools.Payload) ([]byte, error) {
	switch {
	case pl.InlineText != nil:
		return []byte(*pl.InlineText), nil
	case pl.Blob == nil:
		return pl.InlineBytes, nil
	case env.Blobs == nil:
		return nil, invalid("The file is too large to return inline and the session has no blob store.")
	}
	h, err := vfs.ParseHash(strings.TrimPrefix(pl.Blob.BlobRef, tools.BlobRefPrefix))
	if err != nil {
		return nil, fmt.Errorf("read the file's content: %w", err)
	}
	b, err := env.Blobs.Open(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("read the file's content: %w", err)
	}
	defer b.Close()
	return io.ReadAll(io.NewSectionReader(b, 0, b.Size()))
}

// writeFile: "Accepts text or binary payloads, validates size after
// decoding, honours the encoding hint, and updates version/timestamps."
func writeFile(ctx context.Context, env *contract.Env, p *WriteFile) (string, any, error) {
	lim := limitsOf(env.Tools.Policy())
	mode := p.Mode
	switch mode {
	case "":
		mode = "create"
	case "create", "overwrite", "append":
	default:
		return "", nil, invalid("mode must be create, overwrite or append, not %q.", p.Mode)
	}
	enc, binary, err := encodingOf(p.Encoding)
	if err != nil {
		return "", nil, err
	}
	if p.Content == nil {
		return "", nil, invalid("content is required: the text to write, or base64 bytes with encoding \"binary\".")
	}
	content := *p.Content
	args := map[string]any{}
	if binary {
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return "", nil, invalid("Binary content must be base64-encoded: %v.", err)
		}
		if int64(len(data)) > lim.write {
			return "", nil, invalid("Content exceeds maximum length of %s bytes after decoding (got %d); write a smaller file.", thousands(lim.write), len(data))
		}
		args["inline_bytes"] = data
		args["encoding"] = encodingBinary
		content = base64.StdEncoding.EncodeToString(data)
	} else {
		if !utf8.ValidString(content) {
			return "", nil, invalid("Text content must be valid UTF-8; send bytes base64-encoded with encoding \"binary\".")
		}
		if c := utf8.RuneCountInString(content); int64(c) > lim.write {
			return "", nil, invalid("Content exceeds maximum length of %s characters (got %d); write it in parts with mode append.", thousands(lim.write), c)
		}
		args["inline_text"] = content
		// The hint is kept with the bytes: text stays text when it holds
		// NUL bytes (without a hint, the engine would call that binary).
		args["encoding"] = encodingUTF8
	}
	path, err := required(env, p.Path, "file to write")
	if err != nil {
		return "", nil, err
	}
	args["path"] = path.String()
	switch mode {
	case "create":
		args["mode"] = "create_new"
	case "overwrite":
		args["mode"] = "overwrite"
	case "append":
		// The document appends to an existing file; vfsd's append would
		// create one. The version makes the check and the append one step.
		st, err := call(ctx, env, "stat", map[string]any{"path": path.String()})
		if err != nil {
			return "", nil, err
		}
		if !st.OK() {
			if code, msg := failed(st); code != tools.CodeNotFound {
				return "", nil, invalid("%s", msg)
			}
			return "", nil, invalid("File does not exist for the requested mode: %s; create it with mode create.", path)
		}
		if sr := st.Receipt.(*tools.StatReceipt); sr.Kind == "file" {
			args["expected_version"] = sr.Version
		}
		args["mode"] = "append"
	}
	r, err := call(ctx, env, "write_file", args)
	if err != nil {
		return "", nil, err
	}
	if !r.OK() {
		switch code, msg := failed(r); code {
		case tools.CodeAlreadyExists:
			return "", nil, invalid("File already exists; use overwrite or append. (%s exists.)", path)
		case tools.CodeNotFound:
			if mode == "overwrite" {
				return "", nil, invalid("File does not exist for the requested mode: %s; create it with mode create.", path)
			}
			return "", nil, invalid("%s", msg)
		case tools.CodeConflict:
			return "", nil, invalid("%s changed while appending; read it again and retry.", path)
		case tools.CodeIsDirectory:
			return "", nil, invalid("%s is a directory; write to a file path inside it.", path)
		case tools.CodeInvalidInput:
			if mode == "append" && !binary {
				return "", nil, invalid("Cannot append text to %s: it holds bytes that are not UTF-8 text; append base64 content with encoding \"binary\".", path)
			}
			return "", nil, invalid("%s", msg)
		default:
			return "", nil, invalid("%s", msg)
		}
	}
	wr := r.Receipt.(*tools.WriteFileReceipt)
	verb := map[string]string{"create": "Created", "overwrite": "Overwrote", "append": "Appended to"}[mode]
	msg := fmt.Sprintf("%s %s (%d bytes written, %d bytes in all, version %d).", verb, path, wr.WrittenBytes, wr.SizeBytes, wr.Version)
	return msg, writeFileResult{Path: path, Content: content, Mode: mode, Encoding: enc}, nil
}

// encodingOf reads the encoding hint: absent or "utf-8" is text; null is
// text without a hint (kept as utf-8: the content is a JSON string, text);
// "binary" (or "base64") is base64 content. The hint is kept with the
// file's bytes (vfs.Node.Encoding) and decides how read_file returns them.
func encodingOf(raw json.RawMessage) (hint *string, binary bool, err error) {
	utf := encodingUTF8
	if len(raw) == 0 {
		return &utf, false, nil
	}
	if string(raw) == "null" {
		return nil, false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false, invalid("encoding must be a string (\"utf-8\" or \"binary\") or null.")
	}
	switch strings.ToLower(strings.ReplaceAll(s, "_", "-")) {
	case "utf-8", "utf8":
		return &s, false, nil
	case "binary", "base64":
		return &s, true, nil
	}
	return nil, false, invalid("Unsupported encoding %q; use \"utf-8\" for text, or \"binary\" with base64-encoded content.", s)
}

// thousands renders 48000 as "48,000".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// deleteFile: "Deletes the matching file or directory subtree; no-op when
// nothing matches if allow_missing flag is passed." "Directories are
// implicit; removing a directory path deletes all files with that prefix."
func deleteFile(ctx context.Context, env *contract.Env, p *DeleteFile) (string, any, error) {
	if p.Path == nil {
		return "", nil, invalid("path is required: the file or directory to delete, as {\"segments\": [\"dir\", \"name\"]}.")
	}
	path, err := limitsOf(env.Tools.Policy()).normalize(*p.Path)
	if err != nil {
		return "", nil, err
	}
	res := deleteFileResult{Path: path}
	files, err := countFiles(env, path.vfsPath())
	if err != nil {
		return "", nil, invalid("Cannot read %s: %v; nothing was deleted.", path, err)
	}
	if len(path.Segments) == 0 {
		return deleteRoot(ctx, env, p, res, files)
	}
	r, err := call(ctx, env, "delete_file", map[string]any{"path": path.String(), "recursive": true})
	if err != nil {
		return "", nil, err
	}
	if !r.OK() {
		code, msg := failed(r)
		if code != tools.CodeNotFound {
			return "", nil, invalid("%s", msg)
		}
		if !p.AllowMissing {
			return "", nil, invalid("No files matched the provided path: %s. Pass allow_missing to make this a no-op.", path)
		}
		return fmt.Sprintf("Deleted 0 entries under %s (nothing matched).", path), res, nil
	}
	return fmt.Sprintf("Deleted %d %s under %s.", files, plural(files, "entry", "entries"), path), res, nil
}

// deleteRoot deletes everything: the root's path prefix matches every file.
// One batch, so it happens whole or not at all.
func deleteRoot(ctx context.Context, env *contract.Env, p *DeleteFile, res deleteFileResult, files int) (string, any, error) {
	pol := env.Tools.Policy()
	if !pol.Allows("delete_file") {
		return "", nil, invalid("delete_file is not allowed by the %s policy.", pol.Name)
	}
	b := env.Session.NewBatch()
	err := env.Session.Tree().ChildrenErr(vfs.Root, func(name string, _ vfs.Node) bool {
		_ = b.Remove(vfs.Root.Join(name), vfs.RemoveOptions{Recursive: true})
		return true
	})
	if err != nil {
		b.Discard()
		return "", nil, invalid("Cannot read the virtual filesystem's root: %v; nothing was deleted.", err)
	}
	if b.Len() == 0 {
		b.Discard()
		if !p.AllowMissing {
			return "", nil, invalid("No files matched the provided path: the virtual filesystem is empty.")
		}
		return "Deleted 0 entries under . (nothing matched).", res, nil
	}
	if _, err := b.Commit(ctx); err != nil {
		return "", nil, invalid("Cannot delete everything: %v; nothing was deleted.", err)
	}
	return fmt.Sprintf("Deleted %d %s under . (the whole virtual filesystem).", files, plural(files, "entry", "entries")), res, nil
}

// countFiles counts the files (and symlinks) at or under p: the document's
// entries a delete removes.
// A directory that cannot be read (a lazily loaded snapshot's manifest)
// is an error: the count is in the result.
func countFiles(env *contract.Env, p vfs.Path) (int, error) {
	n := 0
	err := env.Session.Tree().Walk(p, func(_ vfs.Path, node vfs.Node) error {
		if !node.IsDir() {
			n++
		}
		return nil
	})
	return n, err
}
