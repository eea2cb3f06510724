package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/vfsd/vfsd/tools"
)

// receiptDescription describes every output schema.
const receiptDescription = "The call's receipt. status is ok on success; on failure (isError) status is the failure's class, " +
	"error_code and summary_text say what was wrong and what to do, and the failure's details (path, line, candidate_lines, " +
	"closest, found, limit, edit_index) take the place of the fields a success reports."

// baseSchemas are the schemas every output schema is built from: the
// fields every receipt has, and the failure receipt's.
var baseSchemas = sync.OnceValues(func() (base, failure *jsonschema.Schema) {
	var err error
	if base, err = jsonschema.For[tools.Receipt](nil); err != nil {
		panic(fmt.Sprintf("mcpserver: schema of tools.Receipt: %v", err))
	}
	if failure, err = jsonschema.For[tools.FailureReceipt](nil); err != nil {
		panic(fmt.Sprintf("mcpserver: schema of tools.FailureReceipt: %v", err))
	}
	return base, failure
})

// OutputSchema returns the outputSchema the server gives the tool name:
// an object schema that every receipt of the tool satisfies, successful
// or not.
//
// MCP clients may validate structuredContent against outputSchema even
// when isError is set (the TypeScript SDK's client does), so the schema is
// the tool's receipt schema (tools.Tool.Receipt) merged with the failure
// receipt's: the properties of both, and only the properties both require
// (status and summary_text) required. It allows properties it does not
// list, so that a daemon newer than this build, adding a receipt field,
// does not break a validating client. A tool this build does not know,
// and the consolidated tool, whose receipt is the chosen action's, get the
// schema of the fields every receipt has.
func OutputSchema(name string) *jsonschema.Schema {
	base, failure := baseSchemas()
	var s *jsonschema.Schema
	if t, ok := tools.Lookup(name); ok && t.Receipt != nil {
		s = merge(t.Receipt.CloneSchemas(), failure)
	} else {
		s = base.CloneSchemas()
	}
	s.Type, s.Types = "object", nil
	s.Description = receiptDescription
	openObjects(s)
	return s
}

// merge adds the properties of b that s lacks to s, and keeps required
// only what both require. A property both have with different schemas
// takes either.
func merge(s, b *jsonschema.Schema) *jsonschema.Schema {
	props := make(map[string]*jsonschema.Schema, len(s.Properties)+len(b.Properties))
	for k, v := range s.Properties {
		props[k] = v
	}
	order := slices.Clone(s.PropertyOrder)
	for _, k := range b.PropertyOrder {
		bp := b.Properties[k]
		if bp == nil {
			continue
		}
		sp, ok := props[k]
		switch {
		case !ok:
			props[k] = bp.CloneSchemas()
			order = append(order, k)
		case !sameSchema(sp, bp):
			props[k] = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{sp, bp.CloneSchemas()}}
		}
	}
	s.Properties, s.PropertyOrder = props, order
	var required []string
	for _, r := range s.Required {
		if slices.Contains(b.Required, r) {
			required = append(required, r)
		}
	}
	s.Required = required
	return s
}

// sameSchema reports whether a and b have the same JSON.
func sameSchema(a, b *jsonschema.Schema) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// openObjects removes every additionalProperties constraint from s and its
// subschemas (the receipt schemas say false everywhere): the schema
// describes receipts, and must not reject one with a field added later.
func openObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		openObjects(p)
	}
	openObjects(s.Items)
	for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for _, p := range l {
			openObjects(p)
		}
	}
	for _, p := range s.Defs {
		openObjects(p)
	}
}
