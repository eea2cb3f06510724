package vfsdcontract

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools"
)

// Name is the contract's name.
const Name = contract.Default

// promptProfile is the profile whose prompt section Prompt returns: the
// daemon's default profile.
const promptProfile = "anthropic"

func init() { contract.Register(Contract{}) }

// Contract is vfsd's own contract.
type Contract struct{}

// Name returns "vfsd".
func (Contract) Name() string { return Name }

// Meta is what the contract says about one tool besides its schema.
type Meta struct {
	Title       string
	Annotations contract.Annotations
}

// meta lists every tool's title and hints. A tool missing here (one added
// to package tools later) gets a title from its name and the hints of a
// mutating or read-only tool (see Describe).
var meta = map[string]Meta{
	"read_file":      {"Read file", contract.Annotations{ReadOnly: true, Idempotent: true}},
	"list_directory": {"List directory", contract.Annotations{ReadOnly: true, Idempotent: true}},
	"glob":           {"Find files by glob", contract.Annotations{ReadOnly: true, Idempotent: true}},
	"grep":           {"Search file contents", contract.Annotations{ReadOnly: true, Idempotent: true}},
	"stat":           {"Describe a path", contract.Annotations{ReadOnly: true, Idempotent: true}},
	"exists":         {"Check whether a path exists", contract.Annotations{ReadOnly: true, Idempotent: true}},
	// Replacing text changes what was there; doing it twice may change it
	// again (a replacement that contains its own old_string).
	"edit_file": {"Edit file", contract.Annotations{Destructive: true}},
	// A patch may delete and overwrite files.
	"apply_patch": {"Apply patch", contract.Annotations{Destructive: true}},
	// Overwrites what is there; append mode makes it not idempotent.
	"write_file": {"Write file", contract.Annotations{Destructive: true}},
	// Creating a directory that exists changes nothing.
	"mkdir": {"Create directory", contract.Annotations{Idempotent: true}},
	// With overwrite it replaces the destination; a second move finds no
	// source.
	"rename": {"Move or rename", contract.Annotations{Destructive: true}},
	// Deleting what is gone leaves the same state.
	"delete_file": {"Delete file or directory", contract.Annotations{Destructive: true, Idempotent: true}},
	// Every operation, chosen by action: it may do anything the others do.
	tools.ConsolidatedTool: {"Filesystem (every operation)", contract.Annotations{Destructive: true}},
}

// Describe returns a tool's title and hints: read-only tools are read-only
// and idempotent, mutating ones destructive unless listed otherwise.
func Describe(name string) Meta {
	if m, ok := meta[name]; ok {
		return m
	}
	m := Meta{Title: name, Annotations: contract.Annotations{Destructive: true}}
	if t, ok := tools.Lookup(name); ok && !t.Mutating {
		m.Annotations = contract.Annotations{ReadOnly: true, Idempotent: true}
	}
	return m
}

// Tools lists every tool in the order the default profile shows them
// (the editing tool first), then any tool that profile leaves out, then
// the consolidated "filesystem" tool.
func (Contract) Tools() []contract.Tool {
	var defs []tools.Definition
	seen := map[string]bool{}
	if p, err := tools.LookupProfile(promptProfile); err == nil {
		for _, d := range p.Definitions() {
			defs = append(defs, d)
			seen[d.Name] = true
		}
	}
	for _, t := range tools.All() {
		if !seen[t.Name] {
			defs = append(defs, tools.Definition{Name: t.Name, Description: t.Description, Params: t.Params})
			seen[t.Name] = true
		}
	}
	if p, err := tools.LookupProfile("consolidated"); err == nil {
		for _, d := range p.Definitions() {
			if !seen[d.Name] {
				defs = append(defs, d)
			}
		}
	}
	out := make([]contract.Tool, 0, len(defs))
	for _, d := range defs {
		schema, err := json.Marshal(d.Params)
		if err != nil {
			// Schemas are built from Go types at init; this cannot happen.
			panic(fmt.Sprintf("vfsdcontract: schema of %s: %v", d.Name, err))
		}
		m := Describe(d.Name)
		out = append(out, contract.Tool{Name: d.Name, Title: m.Title, Description: d.Description,
			InputSchema: schema, Annotations: m.Annotations})
	}
	return out
}

// Prompt is the default profile's prompt section.
func (Contract) Prompt() string {
	r, err := tools.Render(promptProfile)
	if err != nil {
		return ""
	}
	return r.Prompt
}

// Call runs the tool on the session's Toolset: Body is the receipt,
// Status its status, Text its rendering for a model.
func (Contract) Call(ctx context.Context, env *contract.Env, tool string, params json.RawMessage) contract.Result {
	if env == nil || env.Tools == nil {
		body := []byte(`{"status":"error","error_code":"error","summary_text":"no session bound to this call; this is a bug in the caller"}`)
		return contract.Result{Body: body, Text: "no session bound to this call", Status: string(tools.StatusError), IsError: true}
	}
	return FromResponse(env.Tools.Call(ctx, env.SessionID, tool, params))
}

// FromResponse turns a tool's response into a contract result.
func FromResponse(resp *tools.Response) contract.Result {
	return contract.Result{Body: resp.JSON(), Text: resp.Text, Status: string(resp.Status()), IsError: !resp.OK()}
}
