package httpapi

import (
	"net/http"
	"strconv"

	"github.com/vfsd/vfsd/api"
)

// boolParam reads query parameter name as a boolean: def when absent,
// invalid_input when it is not one.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apiErr(api.CodeInvalidInput, "%s=%q: use true or false", name, v)
	}
	return b, nil
}

// limitParam reads ?limit= as a number from 1 to max: max when absent.
func limitParam(r *http.Request, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return max, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apiErr(api.CodeInvalidInput, "limit=%q: give a number from 1 to %d", v, max)
	}
	return min(n, max), nil
}
