package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/vfsd/vfsd/vfs/policy"
)

// Profile decides which tools an agent sees, in which order, and in which
// provider's JSON shape.
type Profile struct {
	Name string
	// Format is the JSON shape: "openai" (function tools), "anthropic"
	// (tool-use), "gemini" (function declarations) or "mcp" (name,
	// description, inputSchema).
	Format string
	// Tools are the tool names, most preferred first; the consolidated
	// profile has the one tool ConsolidatedTool.
	Tools []string
	// Editing is the tool the prompt recommends for changes.
	Editing string
}

// ConsolidatedTool is the name of the one tool of the consolidated profile:
// every operation, chosen by its "action" parameter.
const ConsolidatedTool = "filesystem"

// everyTool lists the tools in the order profiles show them, after their
// preferred editing tool.
var everyTool = []string{"read_file", "list_directory", "glob", "grep", "edit_file", "apply_patch",
	"write_file", "stat", "exists", "mkdir", "rename", "delete_file"}

func withFirst(first string) []string {
	return append([]string{first}, slices.DeleteFunc(slices.Clone(everyTool), func(s string) bool { return s == first })...)
}

var profiles = []Profile{
	{Name: "openai", Format: "openai", Tools: withFirst("apply_patch"), Editing: "apply_patch"},
	{Name: "anthropic", Format: "anthropic", Tools: withFirst("edit_file"), Editing: "edit_file"},
	{Name: "gemini", Format: "gemini", Tools: withFirst("edit_file"), Editing: "edit_file"},
	{Name: "minimal", Format: "mcp", Tools: []string{"read_file", "write_file", "list_directory", "delete_file"}, Editing: "write_file"},
	{Name: "consolidated", Format: "mcp", Tools: []string{ConsolidatedTool}, Editing: "edit_file"},
}

// Profiles returns the profile names.
func Profiles() []string {
	var names []string
	for _, p := range profiles {
		names = append(names, p.Name)
	}
	return names
}

// LookupProfile returns the named profile.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown profile %q; use one of %s", name, strings.Join(Profiles(), ", "))
}

// Rendered is a profile's tool list as its provider wants it, and the
// prompt section that goes with it.
type Rendered struct {
	Profile string
	// Tools is the provider's JSON for the tool list.
	Tools json.RawMessage
	// Prompt is a short markdown section telling the agent how to use the
	// workspace.
	Prompt string
}

// Render renders the named profile.
func Render(name string) (*Rendered, error) { return RenderFor(name, nil) }

// RenderFor renders the named profile for a session under pol: with the
// checkpoint tools when pol enables them (nil: the profile as it is).
func RenderFor(name string, pol *policy.Policy) (*Rendered, error) {
	p, err := LookupProfile(name)
	if err != nil {
		return nil, err
	}
	var list []any
	for _, d := range p.DefinitionsFor(pol) {
		list = append(list, d.shape(p.Format))
	}
	var out any = list
	if p.Format == "gemini" {
		out = map[string]any{"functionDeclarations": list}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("render profile %s: %w", name, err)
	}
	return &Rendered{Profile: name, Tools: buf.Bytes(), Prompt: p.prompt()}, nil
}

// Definition is one tool as a profile presents it.
type Definition struct {
	Name        string
	Description string
	Params      *jsonschema.Schema
}

// DefinitionsFor returns the profile's tools for a session under pol:
// Definitions, then the checkpoint tools when pol enables them.
func (p Profile) DefinitionsFor(pol *policy.Policy) []Definition {
	defs := p.Definitions()
	if pol == nil || !pol.Checkpoints {
		return defs
	}
	for _, name := range CheckpointTools {
		if t, ok := lookup(name); ok {
			defs = append(defs, Definition{Name: t.Name, Description: t.Description, Params: t.Params})
		}
	}
	return defs
}

// Definitions returns the profile's tools, in order.
func (p Profile) Definitions() []Definition {
	var defs []Definition
	for _, name := range p.Tools {
		if name == ConsolidatedTool {
			defs = append(defs, consolidatedDefinition())
			continue
		}
		t, ok := lookup(name)
		if !ok {
			continue // a tool this build lacks
		}
		defs = append(defs, Definition{Name: t.Name, Description: t.Description, Params: t.Params})
	}
	return defs
}

// shape renders the definition in a provider's format.
func (d Definition) shape(format string) any {
	switch format {
	case "openai":
		return map[string]any{"type": "function", "function": map[string]any{
			"name": d.Name, "description": d.Description, "parameters": d.Params}}
	case "anthropic":
		return map[string]any{"name": d.Name, "description": d.Description, "input_schema": d.Params}
	case "gemini":
		return map[string]any{"name": d.Name, "description": d.Description, "parameters": geminiSchema(d.Params)}
	}
	return map[string]any{"name": d.Name, "description": d.Description, "inputSchema": d.Params}
}

// geminiSchema reduces a schema to the OpenAPI subset Gemini's function
// declarations take: type, description, enum, properties, required, items.
func geminiSchema(s *jsonschema.Schema) map[string]any {
	out := map[string]any{"type": s.Type}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Items != nil {
		out["items"] = geminiSchema(s.Items)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, ps := range s.Properties {
			props[name] = geminiSchema(ps)
		}
		out["properties"] = props
	}
	if len(s.Required) > 0 {
		out["required"] = s.Required
	}
	return out
}

// consolidatedDefinition merges every tool into one: "action" names the
// operation and the other parameters are the union of the tools'.
func consolidatedDefinition() Definition {
	props := map[string]*jsonschema.Schema{}
	var actions []any
	var lines []string
	for _, name := range everyTool {
		t, ok := lookup(name)
		if !ok {
			continue
		}
		actions = append(actions, name)
		lines = append(lines, fmt.Sprintf("- %s: %s", name, t.Description))
		for _, pname := range slices.Sorted(maps.Keys(t.Params.Properties)) {
			if _, seen := props[pname]; !seen {
				props[pname] = t.Params.Properties[pname]
			}
		}
	}
	props["action"] = &jsonschema.Schema{Type: "string", Enum: actions, Description: "the operation to perform"}
	return Definition{
		Name:        ConsolidatedTool,
		Description: "Work with the files of the workspace. Set action to one of the operations below and pass that operation's parameters alongside it.\n" + strings.Join(lines, "\n"),
		Params:      &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"action"}},
	}
}

// splitConsolidated takes the action out of a consolidated call's params.
func splitConsolidated(params json.RawMessage) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, &m); err != nil {
		return "", nil, fail(CodeInvalidInput, "parameters are not a valid JSON object: %v", err)
	}
	raw, ok := m["action"]
	var action string
	if !ok || json.Unmarshal(raw, &action) != nil || action == "" {
		return "", nil, fail(CodeInvalidInput, "action is required: one of %s", strings.Join(everyTool, ", "))
	}
	delete(m, "action")
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, fail(CodeInvalidInput, "parameters: %v", err)
	}
	return action, rest, nil
}

// Schemas returns every tool's parameter and receipt schemas, keyed by tool
// name, as one JSON document.
func Schemas() (json.RawMessage, error) {
	doc := map[string]any{}
	for _, t := range All() {
		doc[t.Name] = map[string]any{"description": t.Description, "mutating": t.Mutating, "parameters": t.Params, "receipt": t.Receipt}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render schemas: %w", err)
	}
	return buf.Bytes(), nil
}
