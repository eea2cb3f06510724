package weakincentives

import (
	"encoding/json"
	"strings"

	"github.com/vfsd/vfsd/contract"
)

// vfsPathSchema is the schema of a VfsPath: {"segments": [...]}.
const vfsPathSchema = `{"type":"object","description":"a path relative to the virtual filesystem root, as its segments: [\"src\", \"main.py\"]","properties":{"segments":{"type":"array","items":{"type":"string"},"description":"relative ASCII path segments, without \".\" or \"..\"; at most 16 of at most 80 characters"}},"required":["segments"],"additionalProperties":false}`

func schema(s string) json.RawMessage {
	return json.RawMessage(strings.ReplaceAll(s, "VFSPATH", vfsPathSchema))
}

// Tools lists the document's four tools in its table's order.
func (Contract) Tools() []contract.Tool {
	return []contract.Tool{
		{
			Name:        "list_directory",
			Title:       "List directory",
			Description: "Enumerate directory contents: the files and immediate subdirectories at a path of the virtual filesystem (the root when path is omitted). Fails if the path is a file.",
			InputSchema: schema(`{"type":"object","properties":{"path":VFSPATH},"additionalProperties":false}`),
			Annotations: contract.Annotations{ReadOnly: true, Idempotent: true},
		},
		{
			Name:        "read_file",
			Title:       "Read file",
			Description: "Retrieve a file's contents with its metadata (encoding, size_bytes, version, created_at, updated_at). Binary content comes back base64-encoded. Fails if the file is missing.",
			InputSchema: schema(`{"type":"object","properties":{"path":VFSPATH},"required":["path"],"additionalProperties":false}`),
			Annotations: contract.Annotations{ReadOnly: true, Idempotent: true},
		},
		{
			Name:        "write_file",
			Title:       "Write file",
			Description: "Create or modify a file: mode create (a new file, the default), overwrite (replace an existing file) or append (to an existing file). Content is UTF-8 text, or base64 bytes with encoding \"binary\"; at most 48,000 characters (binary: 48,000 bytes after decoding).",
			InputSchema: schema(`{"type":"object","properties":{"path":VFSPATH,"content":{"type":"string","description":"the text to write; base64 when encoding is \"binary\""},"mode":{"type":"string","enum":["create","overwrite","append"],"default":"create"},"encoding":{"type":["string","null"],"enum":["utf-8","binary",null],"default":"utf-8","description":"utf-8: content is text; binary: content is base64-encoded bytes"}},"required":["path","content"],"additionalProperties":false}`),
			Annotations: contract.Annotations{Destructive: true},
		},
		{
			Name:        "delete_file",
			Title:       "Delete file",
			Description: "Remove a file, or a directory with every file under it. Fails when nothing matches, unless allow_missing is true.",
			InputSchema: schema(`{"type":"object","properties":{"path":VFSPATH,"allow_missing":{"type":"boolean","default":false,"description":"succeed, doing nothing, when nothing matches the path"}},"required":["path"],"additionalProperties":false}`),
			Annotations: contract.Annotations{Destructive: true, Idempotent: true},
		},
	}
}

// Prompt is the markdown VfsToolsSection emits: the document's seven
// instructions, in its order, and the limits they refer to.
func (Contract) Prompt() string {
	return `## Virtual Filesystem Tools

You have a session-scoped virtual filesystem for staging file reads and writes, isolated from the host filesystem. Paths are relative to its root, given as segments: {"segments": ["src", "main.py"]}.

1. Remember the virtual filesystem starts empty aside from any host mounts configured by the orchestrator; create files via ` + "`write_file`" + ` when needed.
2. Host mounts are configuration-time only; you cannot import additional host directories during a session.
3. Use ` + "`list_directory`" + ` to explore before reading or writing specific files; keep listings targeted to minimise output volume.
4. Fetch file contents with ` + "`read_file`" + ` when context is needed, and operate on the returned version to avoid stale edits.
5. Apply edits with ` + "`write_file`" + `, keeping updates concise. Binary payloads are supported but should remain small and intentional; prefer overwriting complete files instead of issuing multiple appends unless streaming logs.
6. Clean up obsolete files or directories via ` + "`delete_file`" + ` once work completes to keep the snapshot tight.
7. Avoid mirroring large repositories or binary assets; orchestrated host mounts should stay focused, and the enforced size limit still applies: at most 48,000 characters per write (binary content: 48,000 bytes after base64 decoding), paths of at most 16 ASCII segments of at most 80 characters.
`
}
