package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/api"
)

// TestCreateSessionPolicyForms: "policy" is a preset's name or a policy
// object, both ways through JSON, and decoding stays strict.
func TestCreateSessionPolicyForms(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       api.CreateSessionRequest
		err        string
	}{
		{name: "preset", body: `{"id":"a","policy":"x07"}`, want: api.CreateSessionRequest{ID: "a", Policy: "x07"}},
		{name: "object", body: `{"policy":{"base":"x07","read_roots":["src"]},"ttl":"1h"}`,
			want: api.CreateSessionRequest{PolicyObject: json.RawMessage(`{"base":"x07","read_roots":["src"]}`), TTL: "1h"}},
		{name: "none", body: `{"profile":"openai"}`, want: api.CreateSessionRequest{Profile: "openai"}},
		{name: "null", body: `{"policy":null}`, want: api.CreateSessionRequest{}},
		{name: "unknown field", body: `{"polcy":"x07"}`, err: `unknown field "polcy"`},
		{name: "wrong type", body: `{"policy":3}`, err: `must be a preset's name (a string, like "x07") or a policy object, not 3`},
		{name: "trailing data", body: `{} {}`, err: "after top-level value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got api.CreateSessionRequest
			err := json.Unmarshal([]byte(c.body), &got)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			var again api.CreateSessionRequest
			require.NoError(t, json.Unmarshal(b, &again))
			require.Equal(t, got, again, "round trip through %s", b)
		})
	}
	_, err := json.Marshal(api.CreateSessionRequest{Policy: "x07", PolicyObject: json.RawMessage(`{}`)})
	require.ErrorContains(t, err, "not both")
}
