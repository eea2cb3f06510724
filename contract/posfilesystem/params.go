package posfilesystem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// params are pos_filesystem's parameters, as the document's "MCP Tool
// Input Schema" gives them. A nil field was not given (or given as null:
// the Optional parameters' None).
type params struct {
	Action     *string
	Path       *string
	Content    *string
	StartLine  *int
	LineCount  *int
	Encoding   *string
	MaxSizeMB  *int
	CreateDirs *bool
	// Ignored are the parameters the schema does not name: the
	// document's signature takes them (**kwargs) and no action uses them.
	Ignored []string
}

// paramNames are the schema's parameters, in the document's order.
var paramNames = []string{"action", "path", "content", "start_line", "line_count", "encoding", "max_size_mb", "create_dirs"}

// decodeParams reads a call's arguments as the document's MCP server
// validates them: strings must be strings; integers and booleans are
// validated in Pydantic's lax mode, which the Python MCP server's
// @mcp.tool() applies (100, 100.0 and "100" are all 100; "true", "yes",
// "on", "1" and 1 are all true); null is the parameter's default; other
// parameters are ignored.
func decodeParams(raw json.RawMessage) (*params, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return &params{}, &toolError{typ: errValue, msg: fmt.Sprintf("the arguments are not a JSON object: %v", err)}
	}
	p := &params{}
	// The action first, so that later errors can echo it.
	if v, ok := m["action"]; ok {
		if err := laxString("action", v, &p.Action); err != nil {
			return p, err
		}
	}
	if v, ok := m["path"]; ok {
		if err := laxString("path", v, &p.Path); err != nil {
			return p, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		var err error
		switch k {
		case "action", "path":
		case "content":
			err = laxString(k, v, &p.Content)
		case "encoding":
			err = laxString(k, v, &p.Encoding)
		case "start_line":
			err = laxInt(k, v, &p.StartLine)
		case "line_count":
			err = laxInt(k, v, &p.LineCount)
		case "max_size_mb":
			err = laxInt(k, v, &p.MaxSizeMB)
		case "create_dirs":
			err = laxBool(k, v, &p.CreateDirs)
		default:
			p.Ignored = append(p.Ignored, k)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func laxString(name string, v json.RawMessage, dst **string) error {
	if isNull(v) {
		return nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return paramError(name, "a string", v)
	}
	*dst = &s
	return nil
}

func laxInt(name string, v json.RawMessage, dst **int) error {
	if isNull(v) {
		return nil
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return paramError(name, "an integer", v)
	}
	var n int
	switch x := x.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return paramError(name, "an integer", v)
		}
		n = int(x)
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return paramError(name, "an integer", v)
		}
		n = i
	default:
		return paramError(name, "an integer", v)
	}
	*dst = &n
	return nil
}

func laxBool(name string, v json.RawMessage, dst **bool) error {
	if isNull(v) {
		return nil
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return paramError(name, "true or false", v)
	}
	var b bool
	switch x := x.(type) {
	case bool:
		b = x
	case float64:
		switch x {
		case 0:
		case 1:
			b = true
		default:
			return paramError(name, "true or false", v)
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "0", "off", "f", "false", "n", "no":
		case "1", "on", "t", "true", "y", "yes":
			b = true
		default:
			return paramError(name, "true or false", v)
		}
	default:
		return paramError(name, "true or false", v)
	}
	*dst = &b
	return nil
}

func paramError(name, want string, got json.RawMessage) error {
	g := string(bytes.TrimSpace(got))
	if len(g) > 60 {
		g = g[:60] + "..."
	}
	return &toolError{typ: errValue, msg: fmt.Sprintf("parameter %s must be %s, not %s; see the tool's schema", name, want, g)}
}
