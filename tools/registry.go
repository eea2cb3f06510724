package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool describes one tool: its name, what it does, and the JSON schemas of
// its parameters and receipt.
type Tool struct {
	Name        string
	Description string
	// Mutating tools change the session; the rest only read it.
	Mutating bool
	Params   *jsonschema.Schema
	Receipt  *jsonschema.Schema
	run      func(ctx context.Context, t *Toolset, raw json.RawMessage) (receipt, error)
}

var registry []*Tool

// schemaOptions render []byte as base64 text, the way encoding/json does.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[[]byte](): {Type: "string", Description: "base64"},
}}

// simplifyNullable turns a pointer field's ["null", T] type into T: models
// read the plain type better, and omitting the field is how to say null.
func simplifyNullable(s *jsonschema.Schema) {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
}

// register adds a tool: run gets the decoded parameters and returns the
// receipt; enums constrain string parameters to their listed values.
func register[P any, R receipt](name, desc string, mutating bool, enums map[string][]any,
	run func(ctx context.Context, t *Toolset, p *P) (R, error)) {
	ps, err := jsonschema.For[P](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s parameters: %v", name, err))
	}
	for _, prop := range ps.Properties {
		simplifyNullable(prop) // every parameter is optional or required already
		for prop, vals := range enums {
			s, ok := ps.Properties[prop]
			if !ok {
				panic(fmt.Sprintf("tools: %s has no parameter %q to constrain", name, prop))
			}
			s.Enum = vals
		}
	}
	rs, err := jsonschema.For[R](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s receipt: %v", name, err))
	}
	registry = append(registry, &Tool{
		Name: name, Description: desc, Mutating: mutating, Params: ps, Receipt: rs,
		run: func(ctx context.Context, t *Toolset, raw json.RawMessage) (receipt, error) {
			var p P
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			return run(ctx, t, &p)
		},
	})
}

// All returns every tool, in a stable order.
func All() []*Tool {
	out := slices.Clone(registry)
	slices.SortFunc(out, func(a, b *Tool) int { return compareStrings(a.Name, b.Name) })
	return out
}

// Names returns the tool names, sorted.
func Names() []string {
	var names []string
	for _, t := range All() {
		names = append(names, t.Name)
	}
	return names
}

// Lookup returns the tool called name.
func Lookup(name string) (*Tool, bool) { return lookup(name) }

func lookup(name string) (*Tool, bool) {
	for _, t := range registry {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
