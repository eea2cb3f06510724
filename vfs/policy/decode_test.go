package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// TestDecodeRefusesUnknownFields: a field vfsd does not know is an error
// that names it. Before Decode, policy JSON went through json.Unmarshal,
// which drops an AOS-style "fs_roots" meant to confine the session: the
// policy allowed reads everywhere, and a read outside the intended root
// returned ok. The test shows both: the lenient decoding that let it
// through, and Decode refusing it.
func TestDecodeRefusesUnknownFields(t *testing.T) {
	aosStyle := []byte(`{"fs_roots":["src"],"symlinks":"deny"}`)

	var lenient policy.Policy
	require.NoError(t, json.Unmarshal(aosStyle, &lenient), "plain json.Unmarshal drops the unknown field")
	require.NoError(t, lenient.Check(vfs.AccessRead, vfs.MustPath("etc/secret")), "...so nothing confines the reads")

	_, err := policy.Decode(aosStyle)
	require.ErrorContains(t, err, `unknown field "fs_roots"`)
	require.ErrorContains(t, err, "read_roots", "the error points at vfsd's field for it")

	for _, c := range []struct{ raw, field string }{
		{`{"caps":{"max_scan_files":10}}`, `"caps.max_scan_files"`},
		{`{"read_roots":["src"],"allowed_fs_ops":["read"]}`, `"allowed_fs_ops"`},
		{`{"Caps":{}}`, `"Caps"`}, // field names are matched exactly
	} {
		_, err := policy.Decode([]byte(c.raw))
		require.ErrorContains(t, err, "unknown field "+c.field, c.raw)
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name  string
		raw   string
		check func(t *testing.T, p *policy.Policy)
		err   string
	}{
		{name: "empty object is the default preset, renamed", raw: `{}`, check: func(t *testing.T, p *policy.Policy) {
			want := policy.Default()
			want.Name, want.Base = "custom", policy.PresetDefault
			require.Equal(t, want, p)
		}},
		{name: "a preset name is the preset", raw: `"x07"`, check: func(t *testing.T, p *policy.Policy) {
			want, _ := policy.Preset(policy.PresetX07)
			require.Equal(t, want, p)
		}},
		{name: "roots confine reads and writes", raw: `{"read_roots":["src","docs"],"write_roots":["src"]}`,
			check: func(t *testing.T, p *policy.Policy) {
				require.NoError(t, p.Check(vfs.AccessRead, vfs.MustPath("docs/a")))
				require.Error(t, p.Check(vfs.AccessRead, vfs.MustPath("etc/secret")))
				require.Error(t, p.Check(vfs.AccessWrite, vfs.MustPath("docs/a")))
				require.Equal(t, policy.DefaultCaps(), p.Caps, "caps not given stay the base's")
			}},
		{name: "caps override field by field", raw: `{"caps":{"max_read_bytes":1024,"max_entries":0}}`,
			check: func(t *testing.T, p *policy.Policy) {
				want := policy.DefaultCaps()
				want.MaxReadBytes, want.MaxEntries = 1024, 0
				require.Equal(t, want, p.Caps)
			}},
		{name: "a base preset with overrides", raw: `{"base":"x07","name":"x07-src","read_roots":["src"],"allowed_ops":["read_file","list_directory"]}`,
			check: func(t *testing.T, p *policy.Policy) {
				require.Equal(t, "x07-src", p.Name)
				require.Equal(t, policy.PresetX07, p.Base)
				require.True(t, p.DenyHidden && p.RejectDotDot && p.NumericCodes, "the base's rules stay")
				require.Equal(t, policy.SymlinksDeny, p.Symlinks)
				require.True(t, p.Allows("read_file"))
				require.False(t, p.Allows("write_file"))
			}},
		{name: "a base's rule turned off", raw: `{"base":"x07","deny_hidden":false}`,
			check: func(t *testing.T, p *policy.Policy) { require.False(t, p.DenyHidden) }},
		{name: "aos base has no caps", raw: `{"base":"aos","caps":{"max_read_bytes":5}}`,
			check: func(t *testing.T, p *policy.Policy) {
				require.Equal(t, policy.Caps{MaxReadBytes: 5}, p.Caps)
			}},
		{name: "unknown base", raw: `{"base":"nope"}`, err: `unknown policy preset "nope"`},
		{name: "unknown preset", raw: `"nope"`, err: `unknown policy preset "nope"`},
		{name: "a preset's name is not a custom policy's", raw: `{"name":"x07","read_roots":["src"]}`, err: `"x07" is a preset's name`},
		{name: "wrong type names the field", raw: `{"caps":{"max_read_bytes":"1k"}}`, err: `"caps.max_read_bytes" must be a number`},
		{name: "bad symlinks", raw: `{"symlinks":"sometimes"}`, err: `unknown symlink policy "sometimes"`},
		{name: "negative cap", raw: `{"caps":{"max_depth":-1}}`, err: "must not be negative"},
		{name: "bad root", raw: `{"read_roots":["../up"]}`, err: `root "../up"`},
		{name: "empty op", raw: `{"allowed_ops":[""]}`, err: "allowed_ops"},
		{name: "trailing data", raw: `{} {}`, err: "after the policy object"},
		{name: "not an object", raw: `[1]`, err: "policy must be a JSON object"},
		{name: "not JSON", raw: `{`, err: "not valid JSON"},
		{name: "empty", raw: ``, err: "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.Decode([]byte(c.raw))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, p.Validate())
			c.check(t, p)
		})
	}
}

// TestResolvedRoundTrip: a decoded policy's JSON is its complete form
// (FromJSON, no base applied), which is how sessions persist it.
func TestResolvedRoundTrip(t *testing.T) {
	p, err := policy.Decode([]byte(`{"base":"aos","read_roots":["src"],"caps":{"max_entries":7}}`))
	require.NoError(t, err)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	q, err := policy.FromJSON(b)
	require.NoError(t, err)
	require.Equal(t, p, q)
	_, err = policy.FromJSON([]byte(`{"name":"x","symlinks":"deny","fs_roots":[]}`))
	require.ErrorContains(t, err, `unknown field "fs_roots"`)
}
