package x07

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs"
	"github.com/vfsd/vfsd/vfs/policy"
)

// The document's example policy (the X07 repository's
// docs/examples/os-read-file/run-os-policy.example.json) decodes unchanged.
const examplePolicy = `{
  "schema_version": "x07.run-os-policy@0.1.0",
  "policy_id": "example_readonly",
  "limits": {"cpu_ms": 5000, "wall_ms": 6000, "mem_bytes": 67108864, "fds": 64, "procs": 16},
  "fs": {"enabled": true, "read_roots": ["./"], "write_roots": [], "deny_hidden": true},
  "net": {"enabled": false, "allow_dns": false, "allow_tcp": false, "allow_udp": false, "allow_hosts": []},
  "env": {"enabled": false, "allow_keys": [], "deny_keys": []},
  "time": {"enabled": false, "allow_monotonic": false, "allow_wall_clock": false, "allow_sleep": false, "max_sleep_ms": 0, "allow_local_tzid": false},
  "language": {"allow_unsafe": false, "allow_ffi": false},
  "process": {"enabled": false, "allow_spawn": false, "max_live": 0, "max_spawns": 0, "allow_exec": false, "allow_exit": false}
}`

func TestDecodePolicyExample(t *testing.T) {
	p, err := (&X07{}).DecodePolicy(json.RawMessage(examplePolicy))
	require.NoError(t, err)
	require.Equal(t, "example_readonly", p.Name)
	require.Equal(t, []string{"/"}, p.ReadRoots)
	require.Empty(t, p.WriteRoots)
	require.True(t, p.DenyHidden)
	require.True(t, p.RejectDotDot)
	require.Equal(t, policy.SymlinksDeny, p.Symlinks, "fs.allow_symlinks omitted: denied")
	require.Equal(t, []string{opReadAll, opStat, opCapsDefault, opCapsPack}, p.AllowedOps,
		"no write root: no write operation; allow_walk omitted: no listing")
	require.Equal(t, int64(16<<20), p.Caps.MaxReadBytes)
	require.Equal(t, int64(16<<20), p.Caps.MaxWriteBytes)
	require.Equal(t, int64(10000), p.Caps.MaxEntries)
	require.Equal(t, int64(64), p.Caps.MaxWalkDepth)
	require.NoError(t, p.Validate())
}

func TestDecodePolicyFields(t *testing.T) {
	p, err := (&X07{}).DecodePolicy(json.RawMessage(`{"fs":{"enabled":true,"read_roots":[".","data/","/abs"],"write_roots":["./out"],
		"deny_hidden":false,"allow_symlinks":true,"allow_mkdir":true,"allow_remove":true,"allow_rename":true,"allow_walk":true,"allow_glob":true,
		"max_read_bytes":1,"max_write_bytes":2,"max_entries":3,"max_depth":4}}`))
	require.NoError(t, err)
	require.Equal(t, "x07", p.Name)
	require.Equal(t, []string{"/", "data", "abs"}, p.ReadRoots)
	require.Equal(t, []string{"out"}, p.WriteRoots)
	require.False(t, p.DenyHidden)
	require.Equal(t, policy.SymlinksWithinRoot, p.Symlinks)
	for _, op := range toolOrder {
		require.True(t, p.Allows(op), op)
	}
	require.Equal(t, policy.Caps{MaxReadBytes: 1, MaxWriteBytes: 2, MaxEntries: 3, MaxWalkDepth: 4,
		MaxInlineBytes: policy.DefaultInlineBytes, MaxForks: policy.DefaultMaxForks}, p.Caps)

	off, err := (&X07{}).DecodePolicy(json.RawMessage(`{"fs":{"enabled":false,"read_roots":["."],"write_roots":["."],"deny_hidden":true}}`))
	require.NoError(t, err)
	require.Equal(t, []string{DisabledOp}, off.AllowedOps)
	require.False(t, off.Allows("read_file"), "vfsd's own tools are refused too")
}

// Strict: an unknown field, a missing required field, a wrong type or a
// wrong schema is an error that names it.
func TestDecodePolicyStrict(t *testing.T) {
	base := `"enabled":true,"read_roots":["."],"write_roots":["."],"deny_hidden":true`
	for _, c := range []struct{ doc, want string }{
		{`{"fs":{` + base + `,"allow_symlink":true}}`, `unknown field "fs.allow_symlink"`},
		{`{"fs":{` + base + `},"root_path":"x"}`, `unknown field "root_path"`},
		{`{"fs":{"enabled":true,"read_roots":["."],"write_roots":["."]}}`, `"fs.deny_hidden" is required`},
		{`{"policy_id":"p"}`, `"fs" is required`},
		{`{"fs":{` + base + `,"max_depth":-1}}`, `"fs.max_depth" must be an integer from 0 to 4294967295`},
		{`{"fs":{` + base + `,"max_entries":4294967296}}`, `"fs.max_entries"`},
		{`{"fs":{"enabled":"yes","read_roots":["."],"write_roots":["."],"deny_hidden":true}}`, `"fs.enabled" must be true or false`},
		{`{"fs":{"enabled":true,"read_roots":"."` + `,"write_roots":["."],"deny_hidden":true}}`, `"fs.read_roots" must be an array`},
		{`{"schema_version":"x07.run-os-policy@9","fs":{` + base + `}}`, `"schema_version"`},
		{`{"fs":{"enabled":true,"read_roots":["../up"],"write_roots":["."],"deny_hidden":true}}`, `fs.read_roots[0] "../up"`},
		{`{"fs":{` + base + `},"net":[]}`, `"net" must be an object`},
		{`[]`, `not a JSON object`},
		{`{"fs":{` + base + `}} {}`, `not a JSON object`},
	} {
		_, err := (&X07{}).DecodePolicy(json.RawMessage(c.doc))
		require.ErrorContains(t, err, c.want, c.doc)
	}
}

// FsStatV1 kind 4 ("other"): a fifo, socket or device.
func TestStatKindOther(t *testing.T) {
	env := toolstest.New(t, (&X07{}).DefaultPolicy(), nil)
	ctx := context.Background()
	_, err := env.S.Mknod(ctx, vfs.MustPath("fifo"), vfs.KindFifo, vfs.CreateOptions{Perm: 0o644}, 0)
	require.NoError(t, err)
	cenv := &contract.Env{SessionID: env.S.ID(), Session: env.S, Tools: env.Tools, Policy: env.Tools.Policy()}
	r := (&X07{}).Call(ctx, cenv, "stat_v1", json.RawMessage(`{"path":"fifo"}`))
	require.False(t, r.IsError, string(r.Body))
	var b okBytes
	require.NoError(t, json.Unmarshal(r.Body, &b))
	raw, err := base64.StdEncoding.DecodeString(b.BytesB64)
	require.NoError(t, err)
	s, err := DecodeStat(raw)
	require.NoError(t, err)
	require.Equal(t, FsStatV1{Version: 1, Kind: KindOther, SizeBytes: 0, MtimeUnixSecs: s.MtimeUnixSecs}, s)
	r = (&X07{}).Call(ctx, cenv, "read_all_v1", json.RawMessage(`{"path":"fifo"}`))
	require.Equal(t, "FS_ERR_UNSUPPORTED", r.Status, string(r.Body))
}

// A session under vfsd's own policies (no x07 policy) runs the contract
// with the document's defaults; allowed_ops written for vfsd's tools
// allow the x07 operation that does the same.
func TestVfsdPolicies(t *testing.T) {
	ctx := context.Background()
	pol := policy.Default()
	pol.AllowedOps = []string{"read_file"}
	env := toolstest.New(t, pol, map[string]string{"f": "x", ".h": "h"})
	cenv := &contract.Env{SessionID: env.S.ID(), Session: env.S, Tools: env.Tools, Policy: env.Tools.Policy()}
	r := (&X07{}).Call(ctx, cenv, "read_all_v1", json.RawMessage(`{"path":".h"}`))
	require.Equal(t, "ok", r.Status, "vfsd's default policy does not deny hidden paths")
	r = (&X07{}).Call(ctx, cenv, "write_all_v1", json.RawMessage(`{"path":"g","data":""}`))
	require.Equal(t, "FS_ERR_POLICY_DENY", r.Status)
	// No session: FS_ERR_IO, never a panic.
	r = (&X07{}).Call(ctx, nil, "read_all_v1", json.RawMessage(`{"path":"f"}`))
	require.Equal(t, "FS_ERR_IO", r.Status)
}
