package posfilesystem

// toolDescription tells a model what pos_filesystem does.
const toolDescription = `File I/O in the project workspace, one tool with an action:
- read: read a text file, whole or a line range (start_line is 1-indexed, line_count lines); files over max_size_mb (default 10) must be read in ranges.
- write: create or overwrite a file with content; missing parent directories are created unless create_dirs is false.
- list: list a directory's entries (directories end with "/").
- delete: delete a file.
- exists: check whether a path exists.
- mkdir: create a directory, with its parents unless create_dirs is false.
Paths are relative to the project root; ".." out of it, absolute paths and hidden files are refused. Every call returns JSON with success, action, path and message, and error and error_type when it fails.`

// inputSchema is the document's "MCP Tool Input Schema" as JSON Schema,
// the Optional parameters nullable with their defaults. The document's
// signature takes further keyword arguments (**kwargs), so other
// properties are allowed (and ignored).
const inputSchema = `{
  "type": "object",
  "properties": {
    "action": {
      "type": "string",
      "enum": ["read", "write", "list", "delete", "exists", "mkdir"],
      "description": "read: read file (full or partial); write: create or overwrite file; list: list directory contents; delete: delete file; exists: check if path exists; mkdir: create directory"
    },
    "path": {
      "type": "string",
      "description": "Required: relative path from project root"
    },
    "content": {
      "anyOf": [{"type": "string"}, {"type": "null"}],
      "default": null,
      "description": "For write action: the file's new content"
    },
    "start_line": {
      "anyOf": [{"type": "integer"}, {"type": "null"}],
      "default": null,
      "description": "For read action: 1-indexed line number to start at"
    },
    "line_count": {
      "anyOf": [{"type": "integer"}, {"type": "null"}],
      "default": null,
      "description": "For read action: number of lines to read (default: to the end of the file)"
    },
    "encoding": {
      "type": "string",
      "default": "utf-8",
      "description": "File encoding: utf-8, utf-8-sig, ascii or latin-1"
    },
    "max_size_mb": {
      "type": "integer",
      "default": 10,
      "description": "Safety limit for read, in MB: a larger file must be read with start_line/line_count"
    },
    "create_dirs": {
      "type": "boolean",
      "default": true,
      "description": "Auto-create parent dirs (write, mkdir)"
    }
  },
  "required": ["action", "path"]
}`

// prompt is the contract's instructions for a model: the usage and
// composition patterns the document has its standards teach.
const prompt = `## Files: pos_filesystem

You work on the project's files with one tool, ` + "`pos_filesystem`" + `: set ` + "`action`" + ` and ` + "`path`" + `
(relative to the project root) and the action's parameters. Every call returns JSON:
` + "`success`, `action`, `path`, `message`" + `, the action's fields, and ` + "`error`" + ` and ` + "`error_type`" + `
(FileNotFoundError, PermissionError, ValueError, ...) when it fails.

| action | parameters | returns |
|---|---|---|
| read | path, start_line (1-indexed), line_count, encoding, max_size_mb (10) | content, lines, size_bytes |
| write | path, content, encoding, create_dirs (true) | size_bytes, lines |
| list | path | entries (directories end with "/") |
| delete | path (a file) | |
| exists | path | exists |
| mkdir | path, create_dirs (true) | |

Examples:
- ` + "`{\"action\": \"read\", \"path\": \"config/settings.py\", \"start_line\": 100, \"line_count\": 50}`" + `
- ` + "`{\"action\": \"write\", \"path\": \"workspace/analysis/report.md\", \"content\": \"# Report\\n\"}`" + `
- ` + "`{\"action\": \"list\", \"path\": \".\"}`" + `, ` + "`{\"action\": \"exists\", \"path\": \"docs/api-spec.yaml\"}`" + `
- ` + "`{\"action\": \"mkdir\", \"path\": \"tests/integration/api\"}`" + `, ` + "`{\"action\": \"delete\", \"path\": \"tmp/old.txt\"}`" + `

Patterns:
- Read before you write: check with exists or read what is there, then write the whole file.
- Append = read + concatenate + write; edit = read + replace the text + write; copy = read + write
  to the new path; move = copy + delete.
- Large files: a read of a file over max_size_mb (10 MB) fails; read it in line ranges
  (start_line, line_count) instead.
- Text files only (UTF-8 by default). Stay inside the project: no absolute paths, no ".." out of
  the root; hidden files (names starting with ".") are off limits unless the workspace allows them.
`
