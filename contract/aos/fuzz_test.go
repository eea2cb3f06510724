package aos

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeParams feeds arbitrary parameters to the decoders and to
// Call: decoding never panics, a decoded path is the path or file_path
// given, and every call returns a receipt with a status (kept corpus in
// testdata/fuzz/FuzzDecodeParams).
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"session_id":"test-session","path":"a.txt"}`, `{"file_path":"a.txt","offset":1,"limit":2}`,
		`{"path":"a.txt","content":{"inline_text":{"text":"x"}},"mode":"create_new"}`,
		`{"path":"a.txt","content":{"bytes":[1,2,300]}}`, `{"patch":{"blob_ref":{"blob_ref":"blake3:00"}}}`,
		`{"path":"a.txt","old_string":"a  b","new_string":"c","replace_all":true}`, `{"pattern":"(","output_mode":"require_inline"}`,
		`[]`, `null`, `{"path":1}`, `{"max_results":-5}`,
	} {
		f.Add([]byte(s))
	}
	_, env := newEnv(f, nil, map[string]string{"a.txt": "a  b\nc\n"})
	c := New()
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodeParams(raw)
		if err == nil {
			_, _ = DecodeContent(p.Content)
			_, _ = DecodePatch(p)
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil {
				if s, ok := m["path"].(string); ok {
					require.Equal(t, s, *p.Path)
				}
			}
		}
		for _, e := range []string{"host.fs.read_file", "process.fs.edit_file", "host.fs.write_file", "host.fs.grep"} {
			r := c.Call(context.Background(), env, e, raw)
			var b map[string]any
			require.NoError(t, json.Unmarshal(r.Body, &b), e)
			require.NotEmpty(t, b["status"], e)
			require.Equal(t, r.Status != "ok", r.IsError)
		}
	})
}

// FuzzFuzzyFind checks the in-line fuzzy matcher on arbitrary text: spans
// are in bounds, ascending and apart, each folds to old_string's fuzzy
// form, and replacing them never panics.
func FuzzFuzzyFind(f *testing.F) {
	f.Add("f(a,   b)\n", "f(a, b)", "g")
	f.Add("say “hi” — now\r\n", "say \"hi\" - now", "")
	f.Add("\t\tif x {\n\t\t\ty()\n\t\t}\n", "    if x {\n        y()\n    }", "    if z {\n    }")
	f.Fuzz(func(t *testing.T, content, old, repl string) {
		spans := FuzzyFind(content, old)
		last := 0
		for _, s := range spans {
			require.True(t, s.Start >= last && s.Start < s.End && s.End <= len(content), "span %v after %d in %d bytes", s, last, len(content))
			require.Equal(t, foldNeedle(old), foldNeedle(content[s.Start:s.End]))
			last = s.End
		}
		if len(spans) > 0 {
			_ = FuzzyReplace(content, spans, old, repl)
		}
	})
}
