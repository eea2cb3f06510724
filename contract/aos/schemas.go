package aos

import "github.com/vfsd/vfsd/contract"

// schema is one effect's presentation: title, description, parameter
// schema (JSON) and annotations.
type schema struct {
	title, desc, params string
	ann                 contract.Annotations
}

// Common schema fragments.
const (
	sessionProp = `"session_id":{"type":"string","description":"the session (host.session) the call runs in; optional: a call is bound to its session"}`
	outputProp  = `"output_mode":{"type":"string","enum":["auto","require_inline"],"description":"auto (default): small UTF-8 payloads inline, large ones as a blob; require_inline: inline or status error with error_code inline_required_too_large"}`
	pathProp    = `"path":{"type":"string","description":"session-relative path (file_path is accepted too)"}`
)

var schemas = map[string]schema{
	"read_file": {
		title: "Read file",
		desc:  "Read a file of the session. Receipt: status (ok|not_found|is_directory|forbidden|error), content (inline_text {text}, inline_bytes {bytes} or blob {blob_ref, size_bytes, preview_bytes}), truncated, size_bytes, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,` + pathProp + `,
"offset_bytes":{"type":"integer","minimum":0,"description":"byte offset to start at (process.fs: offset)"},
"max_bytes":{"type":"integer","minimum":1,"description":"at most this many bytes (process.fs: limit)"},
"encoding":{"type":"string","enum":["utf8","bytes"],"description":"utf8 (default): text; bytes: inline_bytes"},` + outputProp + `},"required":["path"]}`,
		ann: contract.Annotations{ReadOnly: true, Idempotent: true},
	},
	"write_file": {
		title: "Write file",
		desc:  "Write a whole file. content is {\"inline_text\":{\"text\":...}}, {\"inline_bytes\":{\"bytes\":<base64>}} or {\"blob_ref\":{\"blob_ref\":...}}. mode overwrite (default: replace or create) or create_new (status conflict if it exists). Receipt: status (ok|conflict|forbidden|error), written_bytes, created, new_mtime_ns, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,` + pathProp + `,
"content":{"type":"object","description":"exactly one of inline_text, inline_bytes, blob_ref","properties":{
 "inline_text":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
 "inline_bytes":{"type":"object","properties":{"bytes":{"type":"string","description":"base64"}},"required":["bytes"]},
 "blob_ref":{"type":"object","properties":{"blob_ref":{"type":"string"}},"required":["blob_ref"]}}},
"create_parents":{"type":"boolean","description":"create missing parent directories (default false)"},
"mode":{"type":"string","enum":["overwrite","create_new"],"description":"overwrite (default) or create_new"}},"required":["path","content"]}`,
		ann: contract.Annotations{Destructive: true, Idempotent: true},
	},
	"edit_file": {
		title: "Edit file",
		desc:  "Replace old_string with new_string in a file: exact match first, then whitespace-insensitive and quote/dash-insensitive matching. Several matches without replace_all: status ambiguous. Receipt: status (ok|not_found|ambiguous|forbidden|error), replacements, applied, summary_text, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,` + pathProp + `,
"old_string":{"type":"string","minLength":1,"description":"text to replace (required, non-empty)"},
"new_string":{"type":"string","description":"replacement (empty deletes)"},
"replace_all":{"type":"boolean","description":"replace every match (default false)"}},"required":["path","old_string","new_string"]}`,
		ann: contract.Annotations{Destructive: true},
	},
	"apply_patch": {
		title: "Apply patch",
		desc:  "Apply a V4A patch (*** Begin Patch ... *** End Patch): add, update, delete and move files, all or nothing. Receipt: status (ok|parse_error|reject|not_found|forbidden|error), files_changed, changed_paths, ops {add,update,delete,move}, summary_text, errors, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,
"patch":{"type":"object","description":"exactly one of inline_text, blob_ref (a plain string is taken as inline_text)","properties":{
 "inline_text":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
 "blob_ref":{"type":"object","properties":{"blob_ref":{"type":"string"}},"required":["blob_ref"]}}},
"patch_format":{"type":"string","enum":["v4a"],"description":"default v4a"},
"dry_run":{"type":"boolean","description":"validate and report without writing (default false)"}},"required":["patch"]}`,
		ann: contract.Annotations{Destructive: true},
	},
	"grep": {
		title: "Search file contents",
		desc:  "Search files with a regular expression. matches (inline_text or blob) are path:line:text lines. Receipt: status (ok|invalid_regex|not_found|forbidden|error), matches, match_count, truncated, summary_text, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,
"pattern":{"type":"string","description":"regular expression (required)"},
"path":{"type":"string","description":"file or directory (default: the session's working directory)"},
"glob_filter":{"type":"string","description":"only files matching this glob, e.g. *.rs"},
"case_insensitive":{"type":"boolean","description":"default false"},
"max_results":{"type":"integer","minimum":1,"description":"default 100"},` + outputProp + `},"required":["pattern"]}`,
		ann: contract.Annotations{ReadOnly: true, Idempotent: true},
	},
	"glob": {
		title: "Find files",
		desc:  "Find files by glob (e.g. **/*.ts), newest first (path breaks ties). Receipt: status (ok|invalid_pattern|not_found|forbidden|error), paths (inline_text or blob, one per line), count, truncated, summary_text, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,
"pattern":{"type":"string","description":"glob pattern (required)"},
"path":{"type":"string","description":"base directory (default: the session's working directory)"},
"max_results":{"type":"integer","minimum":1,"description":"default 100"},` + outputProp + `},"required":["pattern"]}`,
		ann: contract.Annotations{ReadOnly: true, Idempotent: true},
	},
	"stat": {
		title:  "Stat path",
		desc:   "Describe a path. Receipt: status (ok|not_found|forbidden|error), exists, is_dir, size_bytes, mtime_ns, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,` + pathProp + `},"required":["path"]}`,
		ann:    contract.Annotations{ReadOnly: true, Idempotent: true},
	},
	"exists": {
		title:  "Path exists",
		desc:   "Check whether a path exists. Receipt: status (ok|forbidden|error), exists, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,` + pathProp + `},"required":["path"]}`,
		ann:    contract.Annotations{ReadOnly: true, Idempotent: true},
	},
	"list_dir": {
		title: "List directory",
		desc:  "List a directory: entry names sorted, directories with a trailing /. Receipt: status (ok|not_found|forbidden|error), entries (inline_text or blob), count, truncated, summary_text, error_code.",
		params: `{"type":"object","properties":{` + sessionProp + `,
"path":{"type":"string","description":"directory (default: the session's working directory)"},
"max_results":{"type":"integer","minimum":1,"description":"default 100"},` + outputProp + `}}`,
		ann: contract.Annotations{ReadOnly: true, Idempotent: true},
	},
}
