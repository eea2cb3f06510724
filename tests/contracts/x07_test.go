package contracts

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/contract"
	"github.com/vfsd/vfsd/contract/contracttest"
	"github.com/vfsd/vfsd/contract/x07"
)

// The X07 ext-fs v1 document: ../shared/seeds/004_91e66baa6289ebf6.txt.

func TestX07(t *testing.T) { runAll(t, "x07", x07Cases()) }

// x07Caps is caps_pack_v1 in base64.
func x07Caps(maxRead, maxWrite, maxEntries, maxDepth, flags uint32) string {
	return base64.StdEncoding.EncodeToString(x07.PackCaps(maxRead, maxWrite, maxEntries, maxDepth, flags).Encode())
}

// Flag sets used below.
const (
	fSym    = x07.FlagAllowSymlinks
	fHidden = x07.FlagAllowHidden
	fParent = x07.FlagCreateParents
	fOver   = x07.FlagOverwrite
	fAtomic = x07.FlagAtomicWrite
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// j renders call parameters as JSON.
func j(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// x07Policy is a run-os-policy document (x07.run-os-policy@0.1.0) whose
// fs section is every allow flag on, roots ".", hidden denied, with
// overrides (a nil value leaves the field out). The case gives it as data
// on every transport: the daemon (or contract.DecodePolicy) decodes it.
func x07Policy(overrides map[string]any) string {
	fs := map[string]any{"enabled": true, "read_roots": []string{"."}, "write_roots": []string{"."}, "deny_hidden": true,
		"allow_symlinks": false, "allow_mkdir": true, "allow_remove": true, "allow_rename": true, "allow_walk": true, "allow_glob": true}
	for k, v := range overrides {
		if v == nil {
			delete(fs, k)
			continue
		}
		fs[k] = v
	}
	raw, _ := json.Marshal(map[string]any{"schema_version": x07.SchemaVersion, "policy_id": "test", "fs": fs})
	if _, err := (&x07.X07{}).DecodePolicy(raw); err != nil {
		panic(err)
	}
	return string(raw)
}

func errBody(code int, name string) string {
	return fmt.Sprintf(`{"ok":false,"code":%d,"name":%q}`, code, name)
}

// wantErr is a step that must fail with the code.
func wantErr(tool, params string, code x07.Code) contracttest.Step {
	return contracttest.Step{Tool: tool, Params: params, WantError: true, WantStatus: code.Name(), WantBody: errBody(int(code), code.Name())}
}

// wantText is a list/walk step whose text output must be exactly text.
func wantText(tool, params, text string) contracttest.Step {
	return contracttest.Step{Tool: tool, Params: params, WantStatus: "ok",
		WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q,"text":%q}`, b64(text), text)}
}

// wantBytes is a read step whose bytes must be exactly content.
func wantBytes(params, content string) contracttest.Step {
	return contracttest.Step{Tool: "read_all_v1", Params: params, WantStatus: "ok", WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q}`, b64(content))}
}

// wantI32 is a result_i32 step whose value must be v.
func wantI32(tool, params string, v int32) contracttest.Step {
	return contracttest.Step{Tool: tool, Params: params, WantStatus: "ok", WantBody: fmt.Sprintf(`{"ok":true,"value":%d}`, v)}
}

func fileIs(p, content string) func(t testing.TB, r contract.Result, files map[string]string) {
	return func(t testing.TB, r contract.Result, files map[string]string) {
		got, ok := files["/"+p]
		require.True(t, ok, "%s must exist; files %v", p, files)
		require.Equal(t, content, got)
	}
}

func absent(paths ...string) func(t testing.TB, r contract.Result, files map[string]string) {
	return func(t testing.TB, r contract.Result, files map[string]string) {
		for _, p := range paths {
			_, ok := files["/"+p]
			require.False(t, ok, "%s must not exist; files %v", p, files)
		}
	}
}

// statOf decodes a stat_v1 result's FsStatV1 from its bytes.
func statOf(t testing.TB, r contract.Result) []uint32 {
	var b struct {
		BytesB64 string `json:"bytes_b64"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &b))
	raw, err := base64.StdEncoding.DecodeString(b.BytesB64)
	require.NoError(t, err)
	require.Len(t, raw, 16, "FsStatV1 is a fixed-length 16-byte struct")
	return []uint32{binary.LittleEndian.Uint32(raw), binary.LittleEndian.Uint32(raw[4:]),
		binary.LittleEndian.Uint32(raw[8:]), binary.LittleEndian.Uint32(raw[12:])}
}

func wantStat(path string, kind, size uint32) contracttest.Step {
	return contracttest.Step{Tool: "stat_v1", Params: j("path", path), WantStatus: "ok",
		Check: func(t testing.TB, r contract.Result, _ map[string]string) {
			s := statOf(t, r)
			require.Equal(t, uint32(1), s[0], "version (must be 1)")
			require.Equal(t, kind, s[1], "kind")
			require.Equal(t, size, s[2], "size_bytes_u32")
		}}
}

func x07Cases() []contracttest.Case {
	tree := map[string]string{"d/x.txt": "xx", "d/sub/b.txt": "bbb", "d/sub/c.md": "c", "top.txt": "top", "empty/": ""}
	policyFS := x07Policy
	symPolicy := policyFS(map[string]any{"allow_symlinks": true})
	hiddenOK := policyFS(map[string]any{"deny_hidden": false})
	mtime := uint32(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix())
	sixteenMiB := 16 << 20

	cases := []contracttest.Case{
		// Design goals.
		{Clause: `design goals "Deterministic outputs where possible: directory listings and walks are sorted and use a canonical newline format"`,
			Files: tree, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "d"), "sub\nx.txt\n"),
				wantText("list_dir_sorted_text_v1", j("path", "d"), "sub\nx.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "d", "glob", "**"), "sub/b.txt\nsub/c.md\nx.txt\n"),
			}},
		// Worlds.
		{Clause: `Worlds "It must not be usable in deterministic solve-* worlds" (a session whose policy has fs.enabled=false: FS_ERR_DISABLED)`,
			Files: tree, Policy: policyFS(map[string]any{"enabled": false}), Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "top.txt"), x07.ErrDisabled),
				wantErr("list_dir_sorted_text_v1", j("path", "."), x07.ErrDisabled),
				wantErr("write_all_v1", j("path", "n.txt", "data", b64("n")), x07.ErrDisabled),
			}},
		// Path encoding (v1).
		{Clause: `Path encoding "All paths are passed as bytes that must decode as UTF-8"`,
			Files: map[string]string{"données/é.txt": "ü"}, Steps: []contracttest.Step{
				wantBytes(j("path", "données/é.txt"), "ü"),
				wantErr("read_all_v1", `{"path":42}`, x07.ErrBadPath),
			}},
		{Clause: `Path encoding "Use / as the separator on all platforms (Windows included)"`,
			Files: tree, Steps: []contracttest.Step{
				wantBytes(j("path", "d/sub/b.txt"), "bbb"),
				wantErr("read_all_v1", j("path", `d\sub\b.txt`), x07.ErrBadPath),
			}},
		{Clause: `Path encoding "No NUL byte (0x00) allowed"`,
			Files: tree, Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "top\x00.txt"), x07.ErrBadPath)}},
		{Clause: `Path encoding "No empty segments"`,
			Files: tree, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "d//x.txt"), x07.ErrBadPath),
				wantErr("read_all_v1", j("path", "/top.txt"), x07.ErrBadPath),
				wantErr("list_dir_sorted_text_v1", j("path", "d/"), x07.ErrBadPath),
				wantErr("stat_v1", j("path", ""), x07.ErrBadPath),
			}},
		{Clause: `Path encoding ". segments are ignored"`,
			Files: tree, Steps: []contracttest.Step{
				wantBytes(j("path", "./d/./x.txt"), "xx"),
				wantText("list_dir_sorted_text_v1", j("path", "."), "d\nempty\ntop.txt\n"),
			}},
		{Clause: `Path encoding ".. segments are rejected (path traversal prevention)"`,
			Files: tree, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "d/../top.txt"), x07.ErrBadPath),
				wantErr("write_all_v1", j("path", "../evil", "data", b64("x")), x07.ErrBadPath),
				wantErr("rename_v1", j("src", "top.txt", "dst", "d/../../t"), x07.ErrBadPath),
			}},
		{Clause: `Path encoding "the effective path must be inside an allow-root after normalization/canonicalization"`,
			Files:    map[string]string{"pub/a.txt": "a", "sec/k.txt": "k"},
			Symlinks: map[string]string{"pub/to-sec": "../sec/k.txt"},
			Policy:   policyFS(map[string]any{"read_roots": []string{"./pub"}, "write_roots": []string{"pub/"}, "allow_symlinks": true}),
			Steps: []contracttest.Step{
				wantBytes(j("path", "./pub/./a.txt"), "a"),
				wantErr("read_all_v1", j("path", "sec/k.txt"), x07.ErrPolicyDeny),
				wantErr("read_all_v1", j("path", "pub/to-sec", "caps", x07Caps(0, 0, 0, 0, fSym)), x07.ErrPolicyDeny),
				wantErr("list_dir_sorted_text_v1", j("path", "."), x07.ErrPolicyDeny),
			}},
		{Clause: `Path encoding "A path is considered hidden if any segment starts with . (e.g., .git, .env, dir/.file)"`,
			Files: map[string]string{".env": "s", ".git/config": "c", "dir/.file": "f", "a.b/c": "ok"}, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", ".env"), x07.ErrPolicyDeny),
				wantErr("read_all_v1", j("path", ".git/config"), x07.ErrPolicyDeny),
				wantErr("stat_v1", j("path", "dir/.file"), x07.ErrPolicyDeny),
				wantErr("write_all_v1", j("path", "dir/.new", "data", b64("x")), x07.ErrPolicyDeny),
				wantBytes(j("path", "a.b/c"), "ok"),
			}},
		// Caps encoding: FsCapsV1.
		{Clause: `FsCapsV1 "FsCapsV1 is a fixed-length 24-byte struct"`,
			Files: tree, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "top.txt", "caps", base64.StdEncoding.EncodeToString(make([]byte, 23))), x07.ErrBadCaps),
				wantErr("read_all_v1", j("path", "top.txt", "caps", base64.StdEncoding.EncodeToString(append(x07.DefaultCaps().Encode(), 0))), x07.ErrBadCaps),
				wantErr("read_all_v1", j("path", "top.txt", "caps", "not base64!"), x07.ErrBadCaps),
				wantBytes(j("path", "top.txt", "caps", x07Caps(0, 0, 0, 0, 0)), "top"),
			}},
		{Clause: `FsCapsV1 "0 4 version (must be 1)"`,
			Files: tree, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "top.txt", "caps", base64.StdEncoding.EncodeToString(x07.FsCapsV1{Version: 2}.Encode())), x07.ErrBadCaps),
				wantErr("stat_v1", j("path", "top.txt", "caps", base64.StdEncoding.EncodeToString(make([]byte, 24))), x07.ErrBadCaps),
			}},
		{Clause: `FsCapsV1 "All integers are u32_le" and "4 4 max_read_bytes"`,
			Files: map[string]string{"three": "abc", "four": "abcd"}, Steps: []contracttest.Step{
				// version 1, max_read_bytes 3, little-endian; big-endian would read 3<<24.
				wantBytes(j("path", "three", "caps", base64.StdEncoding.EncodeToString([]byte{1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0})), "abc"),
				wantErr("read_all_v1", j("path", "four", "caps", base64.StdEncoding.EncodeToString([]byte{1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0})), x07.ErrTooLarge),
			}},
		{Clause: `FsCapsV1 "8 4 max_write_bytes"`,
			Files: tree, Steps: []contracttest.Step{
				wantI32("write_all_v1", j("path", "n.txt", "data", b64("1234"), "caps", x07Caps(0, 4, 0, 0, fOver)), 4),
				wantErr("write_all_v1", j("path", "m.txt", "data", b64("12345"), "caps", x07Caps(0, 4, 0, 0, fOver)), x07.ErrTooLarge),
				{Tool: "stat_v1", Params: j("path", "m.txt"), WantBody: `{"ok":true,"stat":{"kind":0}}`, Check: absent("m.txt")},
			}},
		{Clause: `FsCapsV1 "12 4 max_entries (for list/walk)"`,
			Files: map[string]string{"d/a": "", "d/b": "", "d/c": ""}, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "d", "caps", x07Caps(0, 0, 3, 0, 0)), "a\nb\nc\n"),
				wantErr("list_dir_sorted_text_v1", j("path", "d", "caps", x07Caps(0, 0, 2, 0, 0)), x07.ErrTooManyEntries),
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "**", "caps", x07Caps(0, 0, 3, 0, 0)), "d/a\nd/b\nd/c\n"),
				wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "**", "caps", x07Caps(0, 0, 2, 0, 0)), x07.ErrTooManyEntries),
			}},
		{Clause: `FsCapsV1 "16 4 max_depth (for walk)"`,
			Files: map[string]string{"a/b/c.txt": "c", "top.txt": "t"}, Steps: []contracttest.Step{
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "**/*.txt", "caps", x07Caps(0, 0, 0, 3, 0)), "a/b/c.txt\ntop.txt\n"),
				wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "**/*.txt", "caps", x07Caps(0, 0, 0, 2, 0)), x07.ErrDepthExceeded),
				wantText("walk_glob_sorted_text_v1", j("root", "a", "glob", "**/*.txt", "caps", x07Caps(0, 0, 0, 2, 0)), "b/c.txt\n"),
			}},
		{Clause: `FsCapsV1 "20 4 flags bitset" and "bit 0: ALLOW_SYMLINKS"`,
			Files: tree, Symlinks: map[string]string{"link": "d/x.txt", "dlink": "d"}, Policy: symPolicy, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "link", "caps", x07Caps(0, 0, 0, 0, 0)), x07.ErrSymlinkDenied),
				wantBytes(j("path", "link", "caps", x07Caps(0, 0, 0, 0, fSym)), "xx"),
				wantText("list_dir_sorted_text_v1", j("path", "dlink", "caps", x07Caps(0, 0, 0, 0, fSym)), "sub\nx.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "dlink/x*", "caps", x07Caps(0, 0, 0, 0, fSym)), "dlink/x.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "*link*", "caps", x07Caps(0, 0, 0, 0, 0)), "dlink\nlink\n"),
			}},
		{Clause: `FsCapsV1 "bit 1: ALLOW_HIDDEN" (hidden paths are reachable where the policy does not deny them)`,
			Files: map[string]string{".env": "s", "d/.git/config": "c", "d/v": "v"}, Policy: hiddenOK, Steps: []contracttest.Step{
				wantBytes(j("path", ".env", "caps", x07Caps(0, 0, 0, 0, fHidden)), "s"),
				wantText("list_dir_sorted_text_v1", j("path", "d", "caps", x07Caps(0, 0, 0, 0, fHidden)), ".git\nv\n"),
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "**", "caps", x07Caps(0, 0, 0, 0, fHidden)), ".env\nd/.git/config\nd/v\n"),
			}},
		{Clause: `FsCapsV1 "bit 1: ALLOW_HIDDEN" with "Hard sandbox control ... caps clamping" (caps never lift fs.deny_hidden)`,
			Files: map[string]string{".env": "s", "d/.git/config": "c", "d/v": "v"}, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", ".env", "caps", x07Caps(0, 0, 0, 0, fHidden)), x07.ErrPolicyDeny),
				wantText("list_dir_sorted_text_v1", j("path", "d", "caps", x07Caps(0, 0, 0, 0, fHidden)), "v\n"),
			}},
		{Clause: `FsCapsV1 "bit 2: CREATE_PARENTS (mkdirs/write)"`,
			Files: tree, Steps: []contracttest.Step{
				wantErr("write_all_v1", j("path", "n/m/f.txt", "data", b64("f"), "caps", x07Caps(0, 0, 0, 0, fOver)), x07.ErrNotFound),
				{Tool: "write_all_v1", Params: j("path", "n/m/f.txt", "data", b64("f"), "caps", x07Caps(0, 0, 0, 0, fParent)), WantBody: `{"ok":true,"value":1}`, Check: fileIs("n/m/f.txt", "f")},
				wantErr("mkdirs_v1", j("path", "p/q", "caps", x07Caps(0, 0, 0, 0, 0)), x07.ErrNotFound),
				{Tool: "mkdirs_v1", Params: j("path", "p/q", "caps", x07Caps(0, 0, 0, 0, fParent)), WantBody: `{"ok":true,"value":1}`, Check: fileIs("p/q/", "")},
				wantI32("mkdirs_v1", j("path", "p/r", "caps", x07Caps(0, 0, 0, 0, 0)), 1),
			}},
		{Clause: `FsCapsV1 "bit 3: OVERWRITE (write)"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "write_all_v1", Params: j("path", "top.txt", "data", b64("new"), "caps", x07Caps(0, 0, 0, 0, 0)), WantError: true,
					WantBody: errBody(60011, "FS_ERR_ALREADY_EXISTS"), Check: fileIs("top.txt", "top")},
				wantErr("write_all_v1", j("path", "d", "data", b64("new"), "caps", x07Caps(0, 0, 0, 0, 0)), x07.ErrIsDir),
				{Tool: "write_all_v1", Params: j("path", "top.txt", "data", b64("new"), "caps", x07Caps(0, 0, 0, 0, fOver)), WantBody: `{"ok":true,"value":3}`, Check: fileIs("top.txt", "new")},
				wantErr("write_all_v1", j("path", "d", "data", b64("new"), "caps", x07Caps(0, 0, 0, 0, fOver)), x07.ErrIsDir),
			}},
		{Clause: `FsCapsV1 "bit 4: ATOMIC_WRITE (write via temp + rename)"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "write_all_v1", Params: j("path", "top.txt", "data", b64("atomic"), "caps", x07Caps(0, 0, 0, 0, fOver|fAtomic)), WantBody: `{"ok":true,"value":6}`,
					Check: func(t testing.TB, r contract.Result, files map[string]string) {
						fileIs("top.txt", "atomic")(t, r, files)
						for p := range files {
							require.NotContains(t, p, "tmp", "no temporary file is left behind")
						}
					}},
			}},
		{Clause: `FsCapsV1 "bit 4: ATOMIC_WRITE" needs the rename the policy allows (fs.allow_rename=false: FS_ERR_POLICY_DENY)`,
			Files: tree, Policy: policyFS(map[string]any{"allow_rename": false}), Steps: []contracttest.Step{
				wantErr("write_all_v1", j("path", "top.txt", "data", b64("a"), "caps", x07Caps(0, 0, 0, 0, fOver|fAtomic)), x07.ErrPolicyDeny),
				wantI32("write_all_v1", j("path", "top.txt", "data", b64("a"), "caps", x07Caps(0, 0, 0, 0, fOver)), 1),
			}},
		{Clause: `FsCapsV1 "effective_max_* = min(policy_max_*, caps_max_*) for non-zero caps values"`,
			Files: map[string]string{"five": "12345", "d/a": "", "d/b": ""}, Policy: policyFS(map[string]any{"max_read_bytes": 4, "max_entries": 1}), Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "five", "caps", x07Caps(100, 0, 0, 0, 0)), x07.ErrTooLarge),
				wantErr("list_dir_sorted_text_v1", j("path", "d", "caps", x07Caps(0, 0, 100, 0, 0)), x07.ErrTooManyEntries),
			}},
		{Clause: `FsCapsV1 "effective_max_* = min(policy_max_*, caps_max_*)" (the caps' smaller value wins)`,
			Files: map[string]string{"five": "12345"}, Policy: policyFS(map[string]any{"max_read_bytes": 100}), Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "five", "caps", x07Caps(4, 0, 0, 0, 0)), x07.ErrTooLarge),
				wantBytes(j("path", "five", "caps", x07Caps(5, 0, 0, 0, 0)), "12345"),
			}},
		{Clause: `FsCapsV1 "If a caps max is 0, it means use policy/default"`,
			Files:  map[string]string{"five": "12345", "big": strings.Repeat("x", sixteenMiB+1), "ok": strings.Repeat("y", sixteenMiB)},
			Policy: policyFS(map[string]any{"max_read_bytes": 0}), Steps: []contracttest.Step{
				{Tool: "read_all_v1", Params: j("path", "ok", "caps", x07Caps(0, 0, 0, 0, 0)), WantStatus: "ok"},
				wantErr("read_all_v1", j("path", "big", "caps", x07Caps(0, 0, 0, 0, 0)), x07.ErrTooLarge),
			}},
		// Stat encoding: FsStatV1.
		{Clause: `FsStatV1 "FsStatV1 is a fixed-length 16-byte struct (u32_le fields)" and "0 4 version (must be 1)"`,
			Files: tree, Steps: []contracttest.Step{{Tool: "stat_v1", Params: j("path", "d/sub/b.txt"),
				WantBody: `{"ok":true,"stat":{"version":1,"kind":1,"size_bytes_u32":3}}`,
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					require.Equal(t, []uint32{1, 1, 3}, statOf(t, r)[:3])
				}}}},
		{Clause: `FsStatV1 "4 4 kind": "0 = missing / does not exist"`,
			Files: tree, Steps: []contracttest.Step{wantStat("nope", x07.KindMissing, 0), wantStat("top.txt/under", x07.KindMissing, 0)}},
		{Clause: `FsStatV1 "4 4 kind": "1 = file"`, Files: tree, Steps: []contracttest.Step{wantStat("top.txt", x07.KindFile, 3)}},
		{Clause: `FsStatV1 "4 4 kind": "2 = dir"`, Files: tree, Steps: []contracttest.Step{wantStat("d", x07.KindDir, 0), wantStat(".", x07.KindDir, 0)}},
		{Clause: `FsStatV1 "4 4 kind": "3 = symlink"`, Files: tree, Symlinks: map[string]string{"l": "top.txt"},
			Steps: []contracttest.Step{wantStat("l", x07.KindSymlink, 0)}},
		{Clause: `FsStatV1 "8 4 size_bytes_u32 (0 for non-files)"`, Files: map[string]string{"f": "12345", "d/": ""},
			Steps: []contracttest.Step{wantStat("f", x07.KindFile, 5), wantStat("d", x07.KindDir, 0)}},
		{Clause: `FsStatV1 "12 4 mtime_unix_s_u32 (0 if unknown)"`, Files: map[string]string{"f": "x"},
			Steps: []contracttest.Step{{Tool: "stat_v1", Params: j("path", "f"), Check: func(t testing.TB, r contract.Result, _ map[string]string) {
				// The Go transport's session clock is fixed; a daemon's
				// session keeps the host file's mtime, taken now.
				got := statOf(t, r)[3]
				require.GreaterOrEqual(t, got, mtime-1, "the write time, in Unix seconds")
				require.LessOrEqual(t, got, uint32(time.Now().Unix()+60), "the write time, in Unix seconds")
				require.Zero(t, statOf(t, contract.Result{Body: json.RawMessage(fmt.Sprintf(`{"bytes_b64":%q}`,
					base64.StdEncoding.EncodeToString(x07.FsStatV1{Version: 1}.Encode())))})[3], "a missing path's mtime is 0")
			}}, {Tool: "stat_v1", Params: j("path", "gone"), WantBody: `{"ok":true,"stat":{"kind":0,"mtime_unix_s_u32":0}}`}}},
		// Text list outputs.
		{Clause: `Text list outputs "newline-separated UTF-8, sorted ascending, and must end with a trailing \n"`,
			Files: map[string]string{"d/b": "", "d/a": "", "d/B": "", "d/é": "", "d/a-b": "", "d/a.b/x": ""}, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "d"), "B\na\na-b\na.b\nb\né\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "d", "glob", "*"), "B\na\na-b\na.b/x\nb\né\n"),
			}},
		{Clause: `Text list outputs "list_dir_sorted_text_v1 returns entry names (not full paths)"`,
			Files: tree, Steps: []contracttest.Step{wantText("list_dir_sorted_text_v1", j("path", "d/sub"), "b.txt\nc.md\n")}},
		{Clause: `Text list outputs "walk_glob_sorted_text_v1 returns relative paths from the walk root using / separators"`,
			Files: tree, Steps: []contracttest.Step{
				wantText("walk_glob_sorted_text_v1", j("root", "d", "glob", "**/*.txt"), "sub/b.txt\nx.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "*.md"), "d/sub/c.md\n"),
			}},
		{Clause: `Text list outputs "If the result set is empty, the output is the single byte \n (empty line list)"`,
			Files: tree, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "empty"), "\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "d", "glob", "*.none"), "\n"),
			}},
		{Clause: `Text list outputs with "fs.deny_hidden": hidden entries are left out, the others listed (a folder with .env)`,
			Files: map[string]string{"p/.env": "s", "p/a.txt": "a", "p/b.txt": "b", "p/.git/HEAD": "h"}, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "p"), "a.txt\nb.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "p", "glob", "**"), "a.txt\nb.txt\n"),
			}},
		// Public API: FS operations.
		{Clause: `FS operations "All operations take caps: bytes (FsCapsV1)" (omitted caps: caps_default_v1; one caps value reused across calls)`,
			Files: tree, Steps: []contracttest.Step{
				wantBytes(j("path", "top.txt", "caps", x07Caps(16<<20, 16<<20, 10000, 64, 28)), "top"),
				wantBytes(j("path", "top.txt", "caps", x07Caps(16<<20, 16<<20, 10000, 64, 28)), "top"),
				wantBytes(j("path", "top.txt"), "top"),
				wantI32("mkdirs_v1", j("path", "m", "caps", x07Caps(0, 0, 0, 0, 28)), 1),
				wantI32("write_all_v1", j("path", "m/w", "data", b64("w"), "caps", x07Caps(0, 0, 0, 0, 28)), 1),
				wantI32("rename_v1", j("src", "m/w", "dst", "m/v", "caps", x07Caps(0, 0, 0, 0, 28)), 1),
				wantI32("remove_file_v1", j("path", "m/v", "caps", x07Caps(0, 0, 0, 0, 28)), 1),
				wantI32("remove_dir_all_v1", j("path", "m", "caps", x07Caps(0, 0, 0, 0, 28)), 1),
				wantText("list_dir_sorted_text_v1", j("path", "empty", "caps", x07Caps(0, 0, 0, 0, 28)), "\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "empty", "glob", "*", "caps", x07Caps(0, 0, 0, 0, 28)), "\n"),
				{Tool: "stat_v1", Params: j("path", "top.txt", "caps", x07Caps(0, 0, 0, 0, 28)), WantBody: `{"ok":true,"stat":{"kind":1}}`},
			}},
		{Clause: `FS operations "std.os.fs.read_all_v1(path: bytes, caps: bytes) -> result_bytes"`,
			Files: map[string]string{"bin": "\x00\xff\x01", "t.txt": "text"}, Steps: []contracttest.Step{
				wantBytes(j("path", "bin"), "\x00\xff\x01"),
				{Tool: "read_all_v1", Params: j("path", "t.txt"), WantBody: `{"ok":true,"bytes_b64":"dGV4dA=="}`,
					Check: func(t testing.TB, r contract.Result, _ map[string]string) { require.Equal(t, "text", r.Text) }},
				wantErr("read_all_v1", j("path", "nope"), x07.ErrNotFound),
			}},
		{Clause: `FS operations "std.os.fs.write_all_v1(path: bytes, data: bytes, caps: bytes) -> result_i32"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "write_all_v1", Params: j("path", "n.bin", "data", base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255})), WantBody: `{"ok":true,"value":4}`, Check: fileIs("n.bin", "\x00\x01\x02\xff")},
				{Tool: "write_all_v1", Params: j("path", "e", "data", ""), WantBody: `{"ok":true,"value":0}`, Check: fileIs("e", "")},
				wantErr("write_all_v1", j("path", "x", "data", "***"), x07.ErrUnsupported),
				wantErr("write_all_v1", j("path", "x"), x07.ErrUnsupported),
			}},
		{Clause: `FS operations "std.os.fs.mkdirs_v1(path: bytes, caps: bytes) -> result_i32"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "mkdirs_v1", Params: j("path", "a/b/c"), WantBody: `{"ok":true,"value":1}`, Check: fileIs("a/b/c/", "")},
				wantI32("mkdirs_v1", j("path", "a/b/c"), 1),
				wantI32("mkdirs_v1", j("path", "."), 1),
				wantErr("mkdirs_v1", j("path", "top.txt"), x07.ErrAlreadyExists),
				wantErr("mkdirs_v1", j("path", "top.txt/x"), x07.ErrNotDir),
			}},
		{Clause: `FS operations "std.os.fs.remove_file_v1(path: bytes, caps: bytes) -> result_i32"`,
			Files: tree, Symlinks: map[string]string{"l": "d"}, Steps: []contracttest.Step{
				{Tool: "remove_file_v1", Params: j("path", "top.txt"), WantBody: `{"ok":true,"value":1}`, Check: absent("top.txt")},
				wantErr("remove_file_v1", j("path", "top.txt"), x07.ErrNotFound),
				wantErr("remove_file_v1", j("path", "d"), x07.ErrIsDir),
				{Tool: "remove_file_v1", Params: j("path", "l"), WantBody: `{"ok":true,"value":1}`, Check: fileIs("d/x.txt", "xx")},
			}},
		{Clause: `FS operations "std.os.fs.remove_dir_all_v1(path: bytes, caps: bytes) -> result_i32"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "remove_dir_all_v1", Params: j("path", "d"), WantBody: `{"ok":true,"value":1}`, Check: absent("d/", "d/x.txt", "d/sub/b.txt")},
				wantErr("remove_dir_all_v1", j("path", "d"), x07.ErrNotFound),
				wantErr("remove_dir_all_v1", j("path", "top.txt"), x07.ErrNotDir),
				wantErr("remove_dir_all_v1", j("path", "."), x07.ErrPolicyDeny),
			}},
		{Clause: `FS operations "std.os.fs.rename_v1(src: bytes, dst: bytes, caps: bytes) -> result_i32"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "rename_v1", Params: j("src", "top.txt", "dst", "d/top2.txt"), WantBody: `{"ok":true,"value":1}`,
					Check: func(t testing.TB, r contract.Result, files map[string]string) {
						fileIs("d/top2.txt", "top")(t, r, files)
						absent("top.txt")(t, r, files)
					}},
				{Tool: "rename_v1", Params: j("src", "d/top2.txt", "dst", "d/x.txt"), WantBody: `{"ok":true,"value":1}`, Check: fileIs("d/x.txt", "top")},
				wantErr("rename_v1", j("src", "nope", "dst", "x"), x07.ErrNotFound),
				wantErr("rename_v1", j("src", "d/x.txt", "dst", "no/such/x"), x07.ErrNotFound),
				wantErr("rename_v1", j("src", "d", "dst", "d/sub/d"), x07.ErrBadPath),
				wantErr("rename_v1", j("src", "d/x.txt", "dst", "d/sub"), x07.ErrIsDir),
			}},
		{Clause: `FS operations "std.os.fs.list_dir_sorted_text_v1(path: bytes, caps: bytes) -> result_bytes"`,
			Files: tree, Steps: []contracttest.Step{
				wantText("list_dir_sorted_text_v1", j("path", "."), "d\nempty\ntop.txt\n"),
				wantErr("list_dir_sorted_text_v1", j("path", "top.txt"), x07.ErrNotDir),
				wantErr("list_dir_sorted_text_v1", j("path", "nope"), x07.ErrNotFound),
			}},
		{Clause: `FS operations "std.os.fs.walk_glob_sorted_text_v1(root: bytes, glob: bytes, caps: bytes) -> result_bytes"`,
			Files: tree, Steps: []contracttest.Step{
				wantText("walk_glob_sorted_text_v1", j("root", ".", "glob", "**/*.{txt,md}"), "d/sub/b.txt\nd/sub/c.md\nd/x.txt\ntop.txt\n"),
				wantText("walk_glob_sorted_text_v1", j("root", "d", "glob", "sub/?.md"), "sub/c.md\n"),
				wantErr("walk_glob_sorted_text_v1", j("root", "d", "glob", "[oops"), x07.ErrBadPath),
				wantErr("walk_glob_sorted_text_v1", j("root", "top.txt", "glob", "*"), x07.ErrNotDir),
				wantErr("walk_glob_sorted_text_v1", j("root", "nope", "glob", "*"), x07.ErrNotFound),
			}},
		{Clause: `FS operations "std.os.fs.stat_v1(path: bytes, caps: bytes) -> result_bytes (Ok(payload = FsStatV1))"`,
			Files: tree, Steps: []contracttest.Step{wantStat("d/x.txt", x07.KindFile, 2)}},
		// Caps and stat helpers.
		{Clause: `Caps helpers "std.os.fs.spec.caps_default_v1() -> bytes"`,
			Steps: []contracttest.Step{{Tool: "caps_default_v1", WantStatus: "ok",
				WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q,"caps":{"version":1,"max_read_bytes":16777216,"max_write_bytes":16777216,"max_entries":10000,"max_depth":64,"flags":28}}`, x07Caps(16<<20, 16<<20, 10000, 64, 28))}}},
		{Clause: `Caps helpers "std.os.fs.spec.caps_pack_v1(max_read_bytes, max_write_bytes, max_entries, max_depth, flags) -> bytes"`,
			Steps: []contracttest.Step{
				{Tool: "caps_pack_v1", Params: j("max_read_bytes", 1, "max_write_bytes", 2, "max_entries", 3, "max_depth", 4, "flags", 5),
					WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q}`, x07Caps(1, 2, 3, 4, 5))},
				{Tool: "caps_pack_v1", Params: j("flags", -1), WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q}`, x07Caps(0, 0, 0, 0, 0xffffffff))},
				wantErr("caps_pack_v1", j("flags", "x"), x07.ErrBadCaps),
			}},
		{Clause: `Caps helpers "std.os.fs.spec.caps_*_v1(caps: bytes_view) -> i32 accessors" (the decoded caps object)`,
			Steps: []contracttest.Step{{Tool: "caps_pack_v1", Params: j("max_read_bytes", 7, "flags", 12),
				WantBody: `{"ok":true,"caps":{"version":1,"max_read_bytes":7,"max_write_bytes":0,"max_entries":0,"max_depth":0,"flags":12}}`}}},
		{Clause: `Stat helpers "std.os.fs.spec.stat_kind_v1 / stat_size_u32_v1 / stat_mtime_unix_s_u32_v1" (the decoded stat object)`,
			Files: tree, Steps: []contracttest.Step{{Tool: "stat_v1", Params: j("path", "top.txt"),
				WantBody: fmt.Sprintf(`{"ok":true,"stat":{"version":1,"kind":1,"size_bytes_u32":3}}`),
				Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					var b struct {
						Stat x07.FsStatV1 `json:"stat"`
					}
					require.NoError(t, json.Unmarshal(r.Body, &b))
					require.Equal(t, statOf(t, r), []uint32{b.Stat.Version, b.Stat.Kind, b.Stat.SizeBytes, b.Stat.MtimeUnixSecs})
				}}}},
		// Builtins.
		{Clause: `Builtins "os.fs.read_all_v1(path, caps) -> result_bytes" (builtin and module names call the same operation)`,
			Files: tree, Steps: []contracttest.Step{
				wantBytes(j("path", "top.txt"), "top"),
				{Tool: "os.fs.read_all_v1", Params: j("path", "top.txt"), WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q}`, b64("top"))},
				{Tool: "std.os.fs.read_all_v1", Params: j("path", "top.txt"), WantBody: fmt.Sprintf(`{"ok":true,"bytes_b64":%q}`, b64("top"))},
				{Tool: "std.os.fs.spec.caps_default_v1", WantStatus: "ok"},
			}},
		// Error codes.
		{Clause: `Error codes "60001 FS_ERR_POLICY_DENY"`, Files: tree, Policy: policyFS(map[string]any{"read_roots": []string{"d"}}),
			Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "top.txt"), x07.ErrPolicyDeny)}},
		{Clause: `Error codes "60002 FS_ERR_DISABLED"`, Files: tree, Policy: policyFS(map[string]any{"enabled": false}),
			Steps: []contracttest.Step{wantErr("stat_v1", j("path", "top.txt"), x07.ErrDisabled)}},
		{Clause: `Error codes "60003 FS_ERR_BAD_PATH"`, Files: tree,
			Steps: []contracttest.Step{wantErr("stat_v1", j("path", "a/../b"), x07.ErrBadPath), wantErr("stat_v1", "{}", x07.ErrBadPath)}},
		{Clause: `Error codes "60004 FS_ERR_BAD_CAPS"`, Files: tree,
			Steps: []contracttest.Step{wantErr("stat_v1", j("path", "top.txt", "caps", "AAAA"), x07.ErrBadCaps)}},
		{Clause: `Error codes "60010 FS_ERR_NOT_FOUND"`, Files: tree,
			Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "missing.txt"), x07.ErrNotFound)}},
		{Clause: `Error codes "60011 FS_ERR_ALREADY_EXISTS"`, Files: tree,
			Steps: []contracttest.Step{wantErr("write_all_v1", j("path", "top.txt", "data", b64("x"), "caps", x07Caps(0, 0, 0, 0, 0)), x07.ErrAlreadyExists),
				wantErr("rename_v1", j("src", "empty", "dst", "d"), x07.ErrAlreadyExists)}},
		{Clause: `Error codes "60012 FS_ERR_NOT_DIR"`, Files: tree,
			Steps: []contracttest.Step{wantErr("list_dir_sorted_text_v1", j("path", "top.txt"), x07.ErrNotDir)}},
		{Clause: `Error codes "60013 FS_ERR_IS_DIR"`, Files: tree,
			Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "d"), x07.ErrIsDir), wantErr("remove_file_v1", j("path", "d"), x07.ErrIsDir)}},
		{Clause: `Error codes "60014 FS_ERR_PERMISSION" (the file's owner permission bits refuse the access)`,
			Files: map[string]string{"secret": "s", "ro": "r"}, Modes: map[string]uint32{"secret": 0o200, "ro": 0o444}, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "secret"), x07.ErrPermission),
				{Tool: "write_all_v1", Params: j("path", "ro", "data", b64("w")), WantError: true, WantBody: errBody(60014, "FS_ERR_PERMISSION"), Check: fileIs("ro", "r")},
				wantBytes(j("path", "ro"), "r"),
			}},
		{Clause: `Error codes "60015 FS_ERR_IO" (a symlink loop)`, Files: tree, Symlinks: map[string]string{"a": "b", "b": "a"}, Policy: symPolicy,
			Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "a", "caps", x07Caps(0, 0, 0, 0, fSym)), x07.ErrIO)}},
		{Clause: `Error codes "60015 FS_ERR_IO" (a walk that follows a symlink back into itself)`, Files: tree, Symlinks: map[string]string{"d/up": ".."}, Policy: symPolicy,
			Steps: []contracttest.Step{
				wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "**", "caps", x07Caps(0, 0, 0, 0, fSym)), x07.ErrIO),
				wantText("walk_glob_sorted_text_v1", j("root", "d/sub", "glob", "**", "caps", x07Caps(0, 0, 0, 0, fSym)), "b.txt\nc.md\n"),
			}},
		{Clause: `Error codes "60016 FS_ERR_TOO_LARGE"`, Files: tree,
			Steps: []contracttest.Step{wantErr("read_all_v1", j("path", "top.txt", "caps", x07Caps(2, 0, 0, 0, 0)), x07.ErrTooLarge)}},
		{Clause: `Error codes "60017 FS_ERR_TOO_MANY_ENTRIES"`, Files: tree,
			Steps: []contracttest.Step{wantErr("list_dir_sorted_text_v1", j("path", ".", "caps", x07Caps(0, 0, 1, 0, 0)), x07.ErrTooManyEntries)}},
		{Clause: `Error codes "60018 FS_ERR_DEPTH_EXCEEDED"`, Files: tree,
			Steps: []contracttest.Step{wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "nothing-matches", "caps", x07Caps(0, 0, 0, 1, 0)), x07.ErrDepthExceeded)}},
		{Clause: `Error codes "60019 FS_ERR_SYMLINK_DENIED"`, Files: tree, Symlinks: map[string]string{"l": "d"}, Steps: []contracttest.Step{
			wantErr("read_all_v1", j("path", "l/x.txt"), x07.ErrSymlinkDenied),
			wantErr("list_dir_sorted_text_v1", j("path", "l"), x07.ErrSymlinkDenied),
			wantErr("stat_v1", j("path", "top.txt", "caps", x07Caps(0, 0, 0, 0, fSym)), x07.ErrSymlinkDenied),
		}},
		{Clause: `Error codes "60020 FS_ERR_UNSUPPORTED"`, Files: tree, Steps: []contracttest.Step{
			wantErr("truncate_v1", j("path", "top.txt"), x07.ErrUnsupported),
			wantErr("read_all_v1", j("path", "top.txt", "offset", 1), x07.ErrUnsupported),
			wantErr("read_all_v1", `[1]`, x07.ErrUnsupported),
		}},
		{Clause: `Error codes "All FS builtins must return deterministic error codes (not raw OS errno)" and "Reserved v1 space: 60000–60999"`,
			Files: tree, Steps: []contracttest.Step{
				{Tool: "read_all_v1", Params: j("path", "missing"), WantError: true, Check: func(t testing.TB, r contract.Result, _ map[string]string) {
					var b struct {
						Code int    `json:"code"`
						Name string `json:"name"`
					}
					require.NoError(t, json.Unmarshal(r.Body, &b))
					require.True(t, b.Code >= 60000 && b.Code <= 60999)
					require.True(t, strings.HasPrefix(b.Name, "FS_ERR_"))
					require.Equal(t, b.Name, r.Status)
				}},
				wantErr("read_all_v1", j("path", "missing"), x07.ErrNotFound),
			}},
		// Sandbox policy.
		{Clause: `Sandbox policy "fs.read_roots (allowlist)"`, Files: tree, Policy: policyFS(map[string]any{"read_roots": []string{"d"}}), Steps: []contracttest.Step{
			wantBytes(j("path", "d/x.txt"), "xx"),
			wantErr("read_all_v1", j("path", "top.txt"), x07.ErrPolicyDeny),
			wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "*"), x07.ErrPolicyDeny),
		}},
		{Clause: `Sandbox policy "fs.read_roots (allowlist)" empty: nothing is readable`, Files: tree, Policy: policyFS(map[string]any{"read_roots": []string{}}), Steps: []contracttest.Step{
			wantErr("read_all_v1", j("path", "top.txt"), x07.ErrPolicyDeny),
			wantErr("stat_v1", j("path", "top.txt"), x07.ErrPolicyDeny),
			wantI32("write_all_v1", j("path", "w", "data", b64("w")), 1),
		}},
		{Clause: `Sandbox policy "fs.write_roots (allowlist)"`, Files: tree, Policy: policyFS(map[string]any{"write_roots": []string{"out"}}), Steps: []contracttest.Step{
			{Tool: "write_all_v1", Params: j("path", "out/r.txt", "data", b64("r")), WantBody: `{"ok":true,"value":1}`, Check: fileIs("out/r.txt", "r")},
			{Tool: "write_all_v1", Params: j("path", "top.txt", "data", b64("w")), WantError: true, WantBody: errBody(60001, "FS_ERR_POLICY_DENY"), Check: fileIs("top.txt", "top")},
			wantErr("remove_file_v1", j("path", "top.txt"), x07.ErrPolicyDeny),
			wantErr("rename_v1", j("src", "out/r.txt", "dst", "r.txt"), x07.ErrPolicyDeny),
			wantBytes(j("path", "top.txt"), "top"),
		}},
		{Clause: `Sandbox policy "fs.write_roots (allowlist)" empty: nothing is writable`, Files: tree, Policy: policyFS(map[string]any{"write_roots": []string{}}), Steps: []contracttest.Step{
			wantErr("write_all_v1", j("path", "n", "data", b64("n")), x07.ErrPolicyDeny),
			wantErr("mkdirs_v1", j("path", "n"), x07.ErrPolicyDeny),
			wantBytes(j("path", "top.txt"), "top"),
		}},
		{Clause: `Sandbox policy "fs.deny_hidden"`, Files: map[string]string{".h/x": "x", "v": "v"}, Policy: hiddenOK, Steps: []contracttest.Step{
			wantBytes(j("path", ".h/x"), "x"),
			wantText("list_dir_sorted_text_v1", j("path", "."), ".h\nv\n"),
		}},
		{Clause: `Sandbox policy "fs.allow_symlinks (optional)" (omitted or false: FS_ERR_SYMLINK_DENIED)`, Files: tree, Symlinks: map[string]string{"l": "top.txt"},
			Policy: policyFS(map[string]any{"allow_symlinks": nil}), Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "l"), x07.ErrSymlinkDenied),
				wantErr("read_all_v1", j("path", "l", "caps", x07Caps(0, 0, 0, 0, fSym)), x07.ErrSymlinkDenied),
			}},
		{Clause: `Sandbox policy "fs.allow_mkdir (optional)"`, Files: tree, Policy: policyFS(map[string]any{"allow_mkdir": false}), Steps: []contracttest.Step{
			wantErr("mkdirs_v1", j("path", "n"), x07.ErrPolicyDeny),
			wantErr("write_all_v1", j("path", "n/f", "data", b64("f"), "caps", x07Caps(0, 0, 0, 0, fParent)), x07.ErrPolicyDeny),
			wantI32("write_all_v1", j("path", "f", "data", b64("f"), "caps", x07Caps(0, 0, 0, 0, 0)), 1),
		}},
		{Clause: `Sandbox policy "fs.allow_remove (optional)"`, Files: tree, Policy: policyFS(map[string]any{"allow_remove": nil}), Steps: []contracttest.Step{
			{Tool: "remove_file_v1", Params: j("path", "top.txt"), WantError: true, WantBody: errBody(60001, "FS_ERR_POLICY_DENY"), Check: fileIs("top.txt", "top")},
			wantErr("remove_dir_all_v1", j("path", "d"), x07.ErrPolicyDeny),
		}},
		{Clause: `Sandbox policy "fs.allow_rename (optional)"`, Files: tree, Policy: policyFS(map[string]any{"allow_rename": false}), Steps: []contracttest.Step{
			wantErr("rename_v1", j("src", "top.txt", "dst", "t2"), x07.ErrPolicyDeny),
		}},
		{Clause: `Sandbox policy "fs.allow_walk (optional)"`, Files: tree, Policy: policyFS(map[string]any{"allow_walk": false}), Steps: []contracttest.Step{
			wantErr("list_dir_sorted_text_v1", j("path", "."), x07.ErrPolicyDeny),
			wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "*"), x07.ErrPolicyDeny),
			wantBytes(j("path", "top.txt"), "top"),
		}},
		{Clause: `Sandbox policy "fs.allow_glob (optional)"`, Files: tree, Policy: policyFS(map[string]any{"allow_glob": false}), Steps: []contracttest.Step{
			wantErr("walk_glob_sorted_text_v1", j("root", ".", "glob", "*"), x07.ErrPolicyDeny),
			wantText("list_dir_sorted_text_v1", j("path", "d"), "sub\nx.txt\n"),
		}},
		{Clause: `Sandbox policy "fs.max_read_bytes / fs.max_write_bytes / fs.max_entries / fs.max_depth (optional)"`,
			Files:  map[string]string{"f": "12345", "a/b/c": "", "a/d": ""},
			Policy: policyFS(map[string]any{"max_read_bytes": 4, "max_write_bytes": 2, "max_entries": 1, "max_depth": 1}), Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", "f"), x07.ErrTooLarge),
				wantErr("write_all_v1", j("path", "g", "data", b64("123")), x07.ErrTooLarge),
				wantErr("list_dir_sorted_text_v1", j("path", "a"), x07.ErrTooManyEntries),
				wantErr("walk_glob_sorted_text_v1", j("root", "a", "glob", "*"), x07.ErrDepthExceeded),
				wantText("walk_glob_sorted_text_v1", j("root", "a/b", "glob", "*"), "c\n"),
			}},
		{Clause: `Sandbox policy "The runner must enforce: root allowlists, hidden deny, symlink rules, max limits, and operation allow flags" (the x07 default policy)`,
			Files: map[string]string{".env": "s", "f": "f"}, Symlinks: map[string]string{"l": "f"}, Steps: []contracttest.Step{
				wantErr("read_all_v1", j("path", ".env"), x07.ErrPolicyDeny),
				wantErr("read_all_v1", j("path", "l"), x07.ErrSymlinkDenied),
				wantBytes(j("path", "f"), "f"),
				wantText("list_dir_sorted_text_v1", j("path", "."), "f\nl\n"),
			}},
	}
	// A case without a policy of its own runs under the contract's default
	// policy (the x07 preset) on every transport.
	return cases
}

// The contract lists exactly the document's operations ("Single canonical
// way: one obvious function per operation; no aliases").
func TestX07Tools(t *testing.T) {
	k, err := contract.Lookup("x07")
	require.NoError(t, err)
	var names []string
	for _, tool := range k.Tools() {
		names = append(names, tool.Name)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		require.Equal(t, "object", schema["type"])
		require.NotEmpty(t, tool.Description)
	}
	require.Equal(t, []string{"read_all_v1", "write_all_v1", "mkdirs_v1", "remove_file_v1", "remove_dir_all_v1", "rename_v1",
		"list_dir_sorted_text_v1", "walk_glob_sorted_text_v1", "stat_v1", "caps_default_v1", "caps_pack_v1"}, names)
	for _, c := range x07.Codes() {
		require.Contains(t, k.Prompt(), fmt.Sprintf("%d %s", int(c), c.Name()))
	}
}
