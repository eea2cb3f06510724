package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// openapiJSON is the OpenAPI 3.1 description of the HTTP API. It is
// written by hand, in api/openapi.json; the package's tests hold it to the
// wire types of this package (every type's schema has the struct's JSON
// fields), to the tools' parameters and receipts, and to the OpenAPI 3.1
// specification.
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPI returns the OpenAPI 3.1 description of the HTTP API (the
// repository's api/openapi.json), as GET /openapi.json serves it. Each call
// returns a fresh copy.
func OpenAPI() []byte { return bytes.Clone(openapiJSON) }

// Route is one operation the OpenAPI description describes.
type Route struct {
	// Method is the operation's HTTP method (GET, POST, ...).
	Method string
	// Path is its OpenAPI path template (/v1/sessions/{id}).
	Path string
	// Pattern is the daemon's net/http ServeMux pattern the operation is
	// served by (its x-vfsd-route): "GET /v1/sessions/{id}" — or, for a
	// route registered for every method (the MCP endpoint), the path
	// alone, "/v1/sessions/{id}/mcp", shared by the operations of all
	// its methods. It differs from Method and Path where ServeMux syntax
	// does: "GET /ui/{$}" is path /ui/, and the prefix pattern
	// "GET /ui/static/" is path /ui/static/{asset}.
	Pattern string
	// Scope is who may call it (its x-vfsd-scope): "public", "admin",
	// "session" (the admin, or the token of the session {id} names),
	// "any" (any valid token) or "page" (the review page, by cookie).
	Scope string
	// OperationID is the operation's operationId.
	OperationID string
}

// describedRoutes parses the description's operations once.
var describedRoutes = sync.OnceValues(func() ([]Route, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	var out []Route
	for path, item := range doc.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue // parameters, summary, x-...
			}
			var op struct {
				OperationID string `json:"operationId"`
				Route       string `json:"x-vfsd-route"`
				Scope       string `json:"x-vfsd-scope"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("api: openapi.json: %s %s: %w", method, path, err)
			}
			if op.Route == "" {
				return nil, fmt.Errorf("api: openapi.json: %s %s has no x-vfsd-route", method, path)
			}
			out = append(out, Route{Method: strings.ToUpper(method), Path: path, Pattern: op.Route, Scope: op.Scope, OperationID: op.OperationID})
		}
	}
	slices.SortFunc(out, func(a, b Route) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return out, nil
})

// DescribedRoutes lists the operations the OpenAPI description describes,
// sorted by path and method: what a test compares with the routes the
// daemon registers (see Route.Pattern; the daemon's catch-all "/", which
// answers 404 and 405 for everything else, is no operation).
func DescribedRoutes() []Route {
	routes, err := describedRoutes()
	if err != nil {
		panic(err) // the embedded document is checked by the package's tests
	}
	return slices.Clone(routes)
}

// DescribedPatterns returns the distinct ServeMux patterns of
// DescribedRoutes, sorted: the set the daemon's route table must equal.
func DescribedPatterns() []string {
	var out []string
	for _, r := range DescribedRoutes() {
		out = append(out, r.Pattern)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
