package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RenderFormat renders tool definitions in a provider's JSON shape, as
// Render does for a profile's: format is "openai", "anthropic", "gemini"
// or "mcp". Contracts other than vfsd's own render their tools with it.
func RenderFormat(format string, defs []Definition) (json.RawMessage, error) {
	list := []any{}
	for _, d := range defs {
		list = append(list, d.shape(format))
	}
	var out any = list
	if format == "gemini" {
		out = map[string]any{"functionDeclarations": list}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("render tools as %s: %w", format, err)
	}
	return buf.Bytes(), nil
}
