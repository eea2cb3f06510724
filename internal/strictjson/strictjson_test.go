package strictjson_test

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/strictjson"
)

type inner struct {
	N int `json:"n"`
}

type params struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
	In    *inner `json:"in"`
}

func TestDecode(t *testing.T) {
	var p params
	require.NoError(t, strictjson.Decode([]byte(` {"path":"a","count":2,"in":{"n":3}} `+"\n\t"), &p))
	require.Equal(t, params{Path: "a", Count: 2, In: &inner{N: 3}}, p)
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name, in string
		check    func(t *testing.T, err error)
	}{
		{"unknown field", `{"path":"a","colour":"red"}`, func(t *testing.T, err error) {
			var uf *strictjson.UnknownFieldError
			require.ErrorAs(t, err, &uf)
			require.Equal(t, "colour", uf.Field)
			require.Equal(t, `json: unknown field "colour"`, err.Error(), "encoding/json's own text")
		}},
		{"unknown nested field", `{"in":{"n":1,"m":2}}`, func(t *testing.T, err error) {
			var uf *strictjson.UnknownFieldError
			require.ErrorAs(t, err, &uf)
			require.Equal(t, "m", uf.Field)
		}},
		{"quoted field name", `{"a\"b":1}`, func(t *testing.T, err error) {
			var uf *strictjson.UnknownFieldError
			require.ErrorAs(t, err, &uf)
			require.Equal(t, `a"b`, uf.Field)
		}},
		{"wrong type", `{"count":"two"}`, func(t *testing.T, err error) {
			var te *json.UnmarshalTypeError
			require.ErrorAs(t, err, &te)
			require.Equal(t, "count", te.Field)
		}},
		{"type error first", `{"count":"two","colour":1}`, func(t *testing.T, err error) {
			var te *json.UnmarshalTypeError
			require.ErrorAs(t, err, &te, "the first problem in the text")
		}},
		{"trailing object", `{"path":"a"} {"path":"b"}`, func(t *testing.T, err error) {
			require.ErrorIs(t, err, strictjson.ErrTrailingData)
		}},
		{"trailing garbage", `{"path":"a"}}`, func(t *testing.T, err error) {
			require.ErrorIs(t, err, strictjson.ErrTrailingData)
		}},
		{"syntax", `{"path":`, func(t *testing.T, err error) {
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		}},
		{"bad syntax", `{path:1}`, func(t *testing.T, err error) {
			var se *json.SyntaxError
			require.ErrorAs(t, err, &se)
		}},
		{"empty", ``, func(t *testing.T, err error) {
			require.ErrorIs(t, err, io.EOF)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p params
			err := strictjson.Decode([]byte(c.in), &p)
			require.Error(t, err)
			c.check(t, err)
		})
	}
}

type custom struct{}

var errCustom = errors.New("custom says no")

func (*custom) UnmarshalJSON([]byte) error { return errCustom }

// TestDecodeUnmarshalerError: an UnmarshalJSON's own error is returned as
// it is.
func TestDecodeUnmarshalerError(t *testing.T) {
	var c custom
	require.ErrorIs(t, strictjson.Decode([]byte(`{}`), &c), errCustom)
}
