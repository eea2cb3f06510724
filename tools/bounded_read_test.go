package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
	"github.com/vfsd/vfsd/vfs/policy"
)

// TestBoundedRead: read_file's memory is bounded by the window it returns,
// never by the file (issue 11: an offset read of a 100 GB sparse file
// allocated its whole size).
func TestBoundedRead(t *testing.T) {
	const size = int64(100 << 30)
	for _, c := range []struct {
		name   string
		preset string
		params map[string]any
		check  func(t *testing.T, r map[string]any)
	}{
		{"offset 99 GB, small window", policy.PresetDefault,
			map[string]any{"path": "huge.bin", "offset_bytes": int64(99 << 30), "max_bytes": 4096},
			func(t *testing.T, r map[string]any) {
				require.Equal(t, float64(99<<30), r["offset_bytes"])
				require.Len(t, r["inline_bytes"], 5464, "4096 bytes, base64")
				require.Equal(t, true, r["truncated"])
			}},
		{"offset 99 GB, no max_bytes, aos", policy.PresetAOS,
			map[string]any{"path": "huge.bin", "offset_bytes": int64(99<<30) + (1<<30 - 8)},
			func(t *testing.T, r map[string]any) {
				require.Equal(t, "AAAAAAAAAAA=", r["inline_bytes"])
				require.Equal(t, false, r["truncated"])
			}},
		{"whole file, default: a page of bytes", policy.PresetDefault,
			map[string]any{"path": "huge.bin"},
			func(t *testing.T, r map[string]any) {
				require.Len(t, r["inline_bytes"], 87384, "64 KiB, base64")
				require.Equal(t, true, r["truncated"])
				require.Equal(t, float64(64<<10), r["next_offset_bytes"])
				require.Equal(t, "binary", r["encoding"])
			}},
		{"byte range from 0, default: a capped blob, streamed", policy.PresetDefault,
			map[string]any{"path": "huge.bin", "offset_bytes": 0},
			func(t *testing.T, r map[string]any) {
				blob := r["blob"].(map[string]any)
				require.LessOrEqual(t, blob["size_bytes"], float64(preset(t, policy.PresetDefault).Caps.MaxReadBytes))
				require.Equal(t, true, r["truncated"])
				require.Equal(t, "binary", r["encoding"])
			}},
		{"line range of a binary file", policy.PresetAOS,
			map[string]any{"path": "huge.bin", "start_line": 1, "line_count": 10},
			func(t *testing.T, r map[string]any) {
				require.Equal(t, string(tools.CodeInvalidInput), r["error_code"])
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := toolstest.New(t, preset(t, c.preset), nil)
			sparse(t, e, "huge.bin", size)
			var resp *tools.Response
			n := allocated(func() { resp = e.Call("read_file", c.params) })
			r := toolstest.Receipt(t, resp)
			require.Less(t, n, uint64(32<<20), "read_file allocated %d bytes", n)
			c.check(t, r)
		})
	}
}

// TestBoundedLineRead: a line window of a large text file is found by
// scanning, not by loading the file.
func TestBoundedLineRead(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 400000; i++ {
		fmt.Fprintf(&b, "line %d of a large text file\n", i)
	}
	text := b.String() // about 12 MiB
	e := toolstest.New(t, preset(t, policy.PresetAOS), map[string]string{"big.txt": text})
	var resp *tools.Response
	n := allocated(func() {
		resp = e.Call("read_file", map[string]any{"path": "big.txt", "start_line": 200000, "line_count": 3})
	})
	r := toolstest.Receipt(t, resp)
	require.Equal(t, "line 200000 of a large text file\nline 200001 of a large text file\nline 200002 of a large text file\n", r["inline_text"], "%s", resp.JSON())
	require.Equal(t, float64(400000), r["total_lines"])
	require.Equal(t, float64(strings.Index(text, "line 200000 ")), r["offset_bytes"])
	require.Less(t, n, uint64(len(text)/2), "a line window allocated %d bytes of a %d-byte file", n, len(text))
}
