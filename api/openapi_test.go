package api_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
	"github.com/vfsd/vfsd/contract"
	_ "github.com/vfsd/vfsd/contract/all" // every contract, for ContractName
	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/vfs/policy"
)

// loadOpenAPI loads the embedded description with kin-openapi.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI())
	require.NoError(t, err)
	return doc
}

// rawOpenAPI decodes the embedded description as plain JSON.
func rawOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))
	return doc
}

// TestOpenAPIValid: the description is a valid OpenAPI 3.1 document (its
// examples included), every operation names its route and scope, and
// operation IDs are unique.
func TestOpenAPIValid(t *testing.T) {
	doc := loadOpenAPI(t)
	require.True(t, doc.IsOpenAPI31OrLater(), "openapi is %q", doc.OpenAPI)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.NoError(t, doc.Validate(context.Background(), openapi3.EnableExamplesValidation()))

	ids := map[string]string{}
	for _, r := range api.DescribedRoutes() {
		where := r.Method + " " + r.Path
		require.NotEmpty(t, r.OperationID, "%s has no operationId", where)
		require.NotContains(t, ids, r.OperationID, "%s and %s share an operationId", where, ids[r.OperationID])
		ids[r.OperationID] = where
		require.Contains(t, []string{"public", "admin", "session", "any", "page"}, r.Scope, "%s: x-vfsd-scope", where)
		// The ServeMux pattern names the same method and path, in its own
		// syntax.
		method, path, ok := strings.Cut(r.Pattern, " ")
		if !ok { // a pattern for every method
			method, path = r.Method, r.Pattern
		}
		require.Equal(t, r.Method, method, "%s: x-vfsd-route %q", where, r.Pattern)
		switch {
		case strings.HasSuffix(path, "/{$}"): // exactly the path
			path = strings.TrimSuffix(path, "{$}")
		case strings.HasSuffix(path, "...}"): // a wildcard taking the rest: one parameter in OpenAPI
			path = strings.Replace(path, "...}", "}", 1)
		case strings.HasSuffix(path, "/"): // a prefix: the rest is one parameter
			require.Regexp(t, `^`+path+`\{[a-z]+\}$`, r.Path, "%s: prefix pattern %q", where, r.Pattern)
			path = r.Path
		}
		require.Equal(t, r.Path, path, "%s: x-vfsd-route %q", where, r.Pattern)
		// Session-scoped routes take the session's ID as {id}, as the
		// daemon's authorization reads it.
		if r.Scope == "session" {
			require.Contains(t, r.Path, "{id}", "%s: a session-scoped route names the session", where)
		}
		op := doc.Paths.Find(r.Path).GetOperation(r.Method)
		require.NotNil(t, op)
		require.NotEmpty(t, op.Tags, "%s has no tag", where)
		require.NotEmpty(t, op.Summary, "%s has no summary", where)
		if strings.HasPrefix(r.Path, "/v1/") && r.Scope != "page" {
			require.NotNil(t, op.Responses.Default(), "%s: API routes answer errors with the envelope (default response)", where)
		}
	}
	require.Contains(t, api.DescribedPatterns(), "/v1/sessions/{id}/mcp")
	require.Contains(t, api.DescribedPatterns(), "GET /healthz")
}

// TestOpenAPISecurity: who may call an operation (x-vfsd-scope) and the
// security requirements it states agree.
func TestOpenAPISecurity(t *testing.T) {
	doc := loadOpenAPI(t)
	for _, r := range api.DescribedRoutes() {
		op := doc.Paths.Find(r.Path).GetOperation(r.Method)
		sec := doc.Security
		if op.Security != nil {
			sec = *op.Security
		}
		var schemes []string
		for _, req := range sec {
			if len(req) == 0 {
				schemes = append(schemes, "none")
			}
			for name := range req {
				schemes = append(schemes, name)
			}
		}
		sort.Strings(schemes)
		want := map[string][]string{
			"public":  {"none"},
			"admin":   {"adminToken"},
			"session": {"adminToken", "sessionToken"},
			"any":     {"adminToken", "sessionToken"},
		}[r.Scope]
		if r.Scope == "page" {
			require.Subset(t, []string{"none", "reviewCookie"}, schemes, "%s %s", r.Method, r.Path)
			continue
		}
		require.Equal(t, want, schemes, "%s %s (scope %s)", r.Method, r.Path, r.Scope)
	}
}

// wireTypes are the types of package api on the wire, by the name of
// their schema in the description. Response types (resp) are held to
// "required": a field without omitempty is always sent, so the schema
// requires it, and one with omitempty may be absent, so it does not.
var wireTypes = []struct {
	schema string
	typ    reflect.Type
	resp   bool
}{
	{"Error", reflect.TypeFor[api.Error](), true},
	{"ErrorBody", reflect.TypeFor[api.ErrorBody](), true},
	{"Mount", reflect.TypeFor[api.Mount](), false},
	{"Quota", reflect.TypeFor[api.Quota](), false},
	{"CreateSessionRequest", reflect.TypeFor[api.CreateSessionRequest](), false},
	{"CreateSessionResponse", reflect.TypeFor[api.CreateSessionResponse](), true},
	{"UpdateSessionRequest", reflect.TypeFor[api.UpdateSessionRequest](), false},
	{"Session", reflect.TypeFor[api.Session](), true},
	{"SessionList", reflect.TypeFor[api.SessionList](), true},
	{"ResetResponse", reflect.TypeFor[api.ResetResponse](), true},
	{"ImportReport", reflect.TypeFor[api.ImportReport](), true},
	{"ImportSkip", reflect.TypeFor[api.ImportSkip](), true},
	{"ImportMountReport", reflect.TypeFor[api.ImportMountReport](), true},
	{"Progress", reflect.TypeFor[api.Progress](), true},
	{"ProgressLine", reflect.TypeFor[api.ProgressLine](), true},
	{"ToolList", reflect.TypeFor[api.ToolList](), true},
	{"ToolResult", reflect.TypeFor[api.ToolResult](), true},
	{"ApplyRequest", reflect.TypeFor[api.ApplyRequest](), false},
	{"ApplyReport", reflect.TypeFor[api.ApplyReport](), true},
	{"ApplyChange", reflect.TypeFor[api.ApplyChange](), true},
	{"Blob", reflect.TypeFor[api.Blob](), true},
	{"MountRequest", reflect.TypeFor[api.MountRequest](), false},
	{"FuseMount", reflect.TypeFor[api.FuseMount](), true},
	{"Event", reflect.TypeFor[api.Event](), true},
	{"Health", reflect.TypeFor[api.Health](), true},
	{"DaemonPaths", reflect.TypeFor[api.DaemonPaths](), true},
	{"Call", reflect.TypeFor[api.Call](), true},
	{"CallList", reflect.TypeFor[api.CallList](), true},
	{"LogEntry", reflect.TypeFor[api.LogEntry](), true},
	{"Log", reflect.TypeFor[api.Log](), true},
	{"RewindRequest", reflect.TypeFor[api.RewindRequest](), false},
	{"RewindResponse", reflect.TypeFor[api.RewindResponse](), true},
	{"RebaseRequest", reflect.TypeFor[api.RebaseRequest](), false},
	{"RebaseReport", reflect.TypeFor[api.RebaseReport](), true},
	{"RebaseConflict", reflect.TypeFor[api.RebaseConflict](), true},
	{"SnapshotRequest", reflect.TypeFor[api.SnapshotRequest](), false},
	{"Snapshot", reflect.TypeFor[api.Snapshot](), true},
	{"SnapshotList", reflect.TypeFor[api.SnapshotList](), true},
	{"RestoreRequest", reflect.TypeFor[api.RestoreRequest](), false},
	{"Diff", reflect.TypeFor[api.Diff](), true},
	{"DiffEntry", reflect.TypeFor[api.DiffEntry](), true},
	{"XattrChange", reflect.TypeFor[api.XattrChange](), true},
	{"GCReport", reflect.TypeFor[api.GCReport](), true},
	{"DeleteSnapshotsResponse", reflect.TypeFor[api.DeleteSnapshotsResponse](), true},
	{"PushReport", reflect.TypeFor[api.PushReport](), true},
	{"RemoteStatus", reflect.TypeFor[api.RemoteStatus](), true},
	{"SessionOwner", reflect.TypeFor[api.SessionOwner](), true},
	{"MoveRequest", reflect.TypeFor[api.MoveRequest](), false},
	{"MoveReport", reflect.TypeFor[api.MoveReport](), true},
	{"Ref", reflect.TypeFor[api.Ref](), true},
	{"RefRequest", reflect.TypeFor[api.RefRequest](), false},
	{"RefList", reflect.TypeFor[api.RefList](), true},
	{"Daemon", reflect.TypeFor[api.Daemon](), true},
	{"DaemonList", reflect.TypeFor[api.DaemonList](), true},
	{"RemoteGCReport", reflect.TypeFor[api.RemoteGCReport](), true},
	{"UILoginRequest", reflect.TypeFor[api.UILoginRequest](), false},
	{"UILoginResponse", reflect.TypeFor[api.UILoginResponse](), true},
	// Not package api's, but on the wire as they are: a policy object
	// (CreateSessionRequest.policy, Session.effective_policy).
	{"Policy", reflect.TypeFor[policy.Policy](), false},
	{"PolicyCaps", reflect.TypeFor[policy.Caps](), false},
}

// notOnTheWire are package api's exported struct types that no request or
// response carries as JSON.
var notOnTheWire = []string{"Route"}

// jsonField is a struct field as encoding/json sends it.
type jsonField struct {
	name      string
	omitempty bool
	field     reflect.StructField
}

// jsonFields lists the fields of struct type t as encoding/json encodes
// them: embedded structs' fields promoted, "-" left out.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty"), field: f})
	}
	return out
}

// TestOpenAPISchemasMatchTypes: every wire type has a schema in the
// description whose properties are exactly the struct's JSON fields, with
// "required" as encoding/json sends them for responses; and every
// exported struct type of package api is a wire type (or said not to be),
// so that a type added without a schema fails here.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	schemas := doc.Components.Schemas
	for _, w := range wireTypes {
		t.Run(w.schema, func(t *testing.T) {
			ref, ok := schemas[w.schema]
			require.True(t, ok, "the description has no schema %s for %s", w.schema, w.typ)
			s := ref.Value
			require.True(t, s.Type.Is("object"), "schema %s is not an object", w.schema)
			var fields, required []string
			for _, f := range jsonFields(w.typ) {
				fields = append(fields, f.name)
				if !f.omitempty {
					required = append(required, f.name)
				}
			}
			var props []string
			for name := range s.Properties {
				props = append(props, name)
			}
			require.ElementsMatch(t, fields, props, "schema %s's properties against %s's JSON fields", w.schema, w.typ)
			if w.resp {
				require.ElementsMatch(t, required, s.Required, "schema %s's required properties against %s's fields without omitempty", w.schema, w.typ)
			} else {
				require.Subset(t, fields, s.Required)
			}
		})
	}

	// Every exported struct type of package api is accounted for.
	described := map[string]bool{}
	for _, w := range wireTypes {
		if w.typ.PkgPath() == reflect.TypeFor[api.Error]().PkgPath() {
			described[w.typ.Name()] = true
		}
	}
	for _, name := range notOnTheWire {
		described[name] = true
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var missing []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && !described[ts.Name.Name] {
					missing = append(missing, ts.Name.Name)
				}
			}
		}
	}
	require.Empty(t, missing, "package api's struct types without a schema in api/openapi.json (add one, and a line to wireTypes)")
}

// TestOpenAPIValuesValidate: a value of every wire type with every field
// set — as the daemon encodes it — validates against its schema, so the
// schemas' types (not only their property names) are the Go types'.
func TestOpenAPIValuesValidate(t *testing.T) {
	doc := loadOpenAPI(t)
	for _, w := range wireTypes {
		t.Run(w.schema, func(t *testing.T) {
			s := doc.Components.Schemas[w.schema].Value
			v := reflect.New(w.typ)
			fill(t, doc, v.Elem(), s)
			b, err := json.Marshal(v.Interface())
			require.NoError(t, err)
			var value any
			require.NoError(t, json.Unmarshal(b, &value))
			require.NoError(t, s.VisitJSON(value, openapi3.EnableJSONSchema2020()), "%s as JSON: %s", w.typ, b)
		})
	}
	// The other form of CreateSessionRequest's policy: an object.
	b, err := json.Marshal(api.CreateSessionRequest{PolicyObject: json.RawMessage(`{"base":"x07","read_roots":["src"],"caps":{"max_read_bytes":10}}`)})
	require.NoError(t, err)
	var value any
	require.NoError(t, json.Unmarshal(b, &value))
	require.NoError(t, doc.Components.Schemas["CreateSessionRequest"].Value.VisitJSON(value, openapi3.EnableJSONSchema2020()))
	// And a value with a field the struct does not have is refused, where
	// the daemon decodes strictly: the test can fail.
	require.Error(t, doc.Components.Schemas["CreateSessionRequest"].Value.VisitJSON(map[string]any{"polcy": "x07"}, openapi3.EnableJSONSchema2020()))
}

// fill sets every field of v (a struct, recursively) to a value its schema
// s allows: the first of an enum, a date-time for time.Time, an object for
// json.RawMessage, one element for a slice.
func fill(t *testing.T, doc *openapi3.T, v reflect.Value, s *openapi3.Schema) {
	t.Helper()
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":1}`)))
		return
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 22, 8, 25, 4, 290000000, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, doc, v.Elem(), s)
	case reflect.Struct:
		for _, f := range jsonFields(v.Type()) {
			var ps *openapi3.Schema
			if s != nil {
				if ref := s.Properties[f.name]; ref != nil {
					ps = deref(doc, ref)
				}
			}
			fv := v.FieldByIndex(f.field.Index)
			fill(t, doc, fv, ps)
		}
	case reflect.Slice:
		var items *openapi3.Schema
		if s != nil && s.Items != nil {
			items = deref(doc, s.Items)
		}
		sl := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, doc, sl.Index(0), items)
		v.Set(sl)
	case reflect.String:
		val := "x"
		if s != nil && len(s.Enum) > 0 {
			val = s.Enum[0].(string)
		}
		if s != nil && s.Format == "date-time" {
			val = "2026-11-22T08:25:04Z"
		}
		v.SetString(val)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Map:
		var vals *openapi3.Schema
		if s != nil && s.AdditionalProperties.Schema != nil {
			vals = deref(doc, s.AdditionalProperties.Schema)
		}
		m := reflect.MakeMap(v.Type())
		val := reflect.New(v.Type().Elem()).Elem()
		fill(t, doc, val, vals)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), val)
		v.Set(m)
	default:
		t.Fatalf("fill: a field of kind %s", v.Kind())
	}
}

// deref returns the schema a property's reference (or inline schema)
// stands for, following anyOf to its first object alternative.
func deref(doc *openapi3.T, ref *openapi3.SchemaRef) *openapi3.Schema {
	s := ref.Value
	if len(s.Properties) == 0 && len(s.AnyOf) > 0 {
		for _, alt := range s.AnyOf {
			if alt.Value.Type.Is("object") {
				return alt.Value
			}
		}
	}
	return s
}

// TestOpenAPIErrorCodes: ErrorCode lists exactly the codes of
// api/errors.go, each with the status the daemon sends it with.
func TestOpenAPIErrorCodes(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errors.go", nil, 0)
	require.NoError(t, err)
	var codes []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if strings.HasPrefix(name.Name, "Code") {
					code, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
					require.NoError(t, err)
					codes = append(codes, code)
				}
			}
		}
	}
	require.NotEmpty(t, codes)

	raw := rawOpenAPI(t)
	ec := raw["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)
	var enum []string
	for _, c := range ec["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	require.ElementsMatch(t, codes, enum, "ErrorCode's enum against api/errors.go's codes")
	status := ec["x-vfsd-status"].(map[string]any)
	meaning := ec["x-vfsd-meaning"].(map[string]any)
	require.Len(t, status, len(codes))
	for _, c := range codes {
		require.EqualValues(t, api.HTTPStatus(c), status[c], "x-vfsd-status of %s", c)
		require.NotEmpty(t, meaning[c], "x-vfsd-meaning of %s", c)
	}
}

// TestOpenAPIToolSchemas: x-vfsd-tools describes every tool of the vfsd
// contract, each one's parameters and receipt schemas having exactly the
// properties (and, for parameters, the required ones and enums) of the
// tool's own schemas; the failure receipt and the base receipt too.
func TestOpenAPIToolSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	raw := rawOpenAPI(t)
	xtools := raw["x-vfsd-tools"].(map[string]any)
	var described []string
	for name := range xtools {
		described = append(described, name)
	}
	require.ElementsMatch(t, tools.Names(), described, "x-vfsd-tools against the tools package's tools")

	schemaOf := func(ref string) *openapi3.Schema {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		s, ok := doc.Components.Schemas[name]
		require.True(t, ok, "no schema %s", name)
		return s.Value
	}
	same := func(what string, got *openapi3.Schema, want *jsonschema.Schema, params bool) {
		var gotProps, wantProps []string
		for k := range got.Properties {
			gotProps = append(gotProps, k)
		}
		for k := range want.Properties {
			wantProps = append(wantProps, k)
		}
		require.ElementsMatch(t, wantProps, gotProps, "%s: properties", what)
		require.ElementsMatch(t, want.Required, got.Required, "%s: required", what)
		if !params {
			return
		}
		for k, w := range want.Properties {
			g := got.Properties[k].Value
			require.ElementsMatch(t, w.Enum, g.Enum, "%s: enum of %s", what, k)
			wt := w.Type
			if wt == "" && len(w.Types) > 0 {
				wt = w.Types[len(w.Types)-1]
			}
			require.True(t, g.Type.Is(wt) || g.Type.Includes(wt), "%s: type of %s is %v, the tool says %s", what, k, g.Type, wt)
		}
	}
	for _, name := range tools.Names() {
		tool, _ := tools.Lookup(name)
		entry := xtools[name].(map[string]any)
		same(name+" params", schemaOf(entry["params"].(map[string]any)["$ref"].(string)), tool.Params, true)
		same(name+" receipt", schemaOf(entry["receipt"].(map[string]any)["$ref"].(string)), tool.Receipt, false)
	}
	failure, err := jsonschema.For[tools.FailureReceipt](nil)
	require.NoError(t, err)
	same("FailureReceipt", schemaOf("#/components/schemas/FailureReceipt"), failure, false)
	base, err := jsonschema.For[tools.Receipt](nil)
	require.NoError(t, err)
	same("ToolReceipt", schemaOf("#/components/schemas/ToolReceipt"), base, false)
}

// TestOpenAPINames: the profiles and contracts the description names are
// the daemon's.
func TestOpenAPINames(t *testing.T) {
	doc := loadOpenAPI(t)
	var profiles []string
	for _, p := range doc.Components.Schemas["Profile"].Value.Enum {
		profiles = append(profiles, p.(string))
	}
	require.ElementsMatch(t, tools.Profiles(), profiles)
	var contracts []string
	for _, c := range doc.Components.Schemas["ContractName"].Value.Examples {
		contracts = append(contracts, c.(string))
	}
	require.ElementsMatch(t, contract.Names(), contracts)
}
