package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools"
	"github.com/vfsd/vfsd/tools/toolstest"
)

// TestReadPages: read_file pages like the agents' own readers. A read
// without a range returns at most DefaultReadLines lines and at most the
// inline limit, ending at a line's end; truncated says whether anything
// was left out, next_start_line (or next_offset_bytes, within a line)
// says where to read on, and the text says so too. A model never gets a
// blob it cannot open: once, reading a file over 64 KiB gave a 512-byte
// preview, a blob reference and truncated:false.
func TestReadPages(t *testing.T) {
	lines := func(n, width int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			l := fmt.Sprintf("line %d ", i)
			b.WriteString(l + strings.Repeat("x", max(width-len(l)-1, 0)) + "\n")
		}
		return b.String()
	}
	files := map[string]string{
		"many.txt":  lines(5000, 20),                          // 100 KB, over the line count
		"wide.txt":  lines(1000, 100),                         // 100 KB in 1000 lines: over the byte cap
		"one.txt":   strings.Repeat("é", 100<<10) + "\nend\n", // one line of 200 KiB
		"small.txt": "a\nb\n",
		"big.bin":   strings.Repeat("\x00\x01", 50<<10),
	}
	e := toolstest.New(t, nil, files)
	read := func(params map[string]any) (map[string]any, string) {
		t.Helper()
		resp := e.Call("read_file", params)
		r := toolstest.Receipt(t, resp)
		require.Equal(t, "ok", r["status"], "%s", resp.JSON())
		require.Nil(t, r["blob"], "a page is inline: %s", resp.JSON())
		return r, resp.Text
	}

	t.Run("over the line count", func(t *testing.T) {
		r, text := read(map[string]any{"path": "many.txt"})
		require.Equal(t, true, r["truncated"])
		require.EqualValues(t, 1, r["start_line"])
		require.EqualValues(t, tools.DefaultReadLines, r["end_line"])
		require.EqualValues(t, 5000, r["total_lines"])
		require.EqualValues(t, 2001, r["next_start_line"])
		require.Nil(t, r["next_offset_bytes"])
		require.True(t, strings.HasPrefix(r["inline_text"].(string), "line 1 x"))
		require.True(t, strings.HasSuffix(text, "[... showing lines 1-2000 of 5000; read on with start_line=2001]\n"), text[len(text)-200:])

		// Reading on, page by page, ends with the last line, not truncated.
		r, _ = read(map[string]any{"path": "many.txt", "start_line": 2001})
		require.EqualValues(t, 4000, r["end_line"])
		require.EqualValues(t, 4001, r["next_start_line"])
		r, text = read(map[string]any{"path": "many.txt", "start_line": 4001})
		require.EqualValues(t, 5000, r["end_line"])
		require.Equal(t, false, r["truncated"])
		require.Nil(t, r["next_start_line"])
		require.NotContains(t, text, "[...")
	})

	t.Run("over the byte cap, at a line's end", func(t *testing.T) {
		r, text := read(map[string]any{"path": "wide.txt"})
		require.Equal(t, true, r["truncated"])
		require.EqualValues(t, 655, r["end_line"], "64 KiB holds 655 lines of 100 bytes")
		require.EqualValues(t, 656, r["next_start_line"])
		body := r["inline_text"].(string)
		require.LessOrEqual(t, len(body), 64<<10)
		require.True(t, strings.HasSuffix(body, "\n"), "a page ends at a line's end")
		require.Contains(t, text, "read on with start_line=656")
		// An explicit line_count pages within the cap too.
		r, _ = read(map[string]any{"path": "wide.txt", "start_line": 100, "line_count": 800})
		require.EqualValues(t, 100, r["start_line"])
		require.EqualValues(t, 755, r["next_start_line"])
	})

	t.Run("one line over the byte cap", func(t *testing.T) {
		r, text := read(map[string]any{"path": "one.txt"})
		require.Equal(t, true, r["truncated"])
		require.EqualValues(t, 1, r["start_line"])
		require.EqualValues(t, 1, r["end_line"])
		require.Nil(t, r["next_start_line"])
		next := r["next_offset_bytes"].(float64)
		require.EqualValues(t, 64<<10, next, "é is two bytes: the cut falls between characters")
		require.Contains(t, text, fmt.Sprintf("read on within it with offset_bytes=%d and max_bytes=65536, or skip to the next line with start_line=2", int(next)))
		r, _ = read(map[string]any{"path": "one.txt", "offset_bytes": next, "max_bytes": 65536})
		require.True(t, strings.HasPrefix(r["inline_text"].(string), "é"))
		r, _ = read(map[string]any{"path": "one.txt", "start_line": 2})
		require.Equal(t, "end\n", r["inline_text"])
	})

	t.Run("binary, a page of bytes", func(t *testing.T) {
		r, text := read(map[string]any{"path": "big.bin"})
		require.Equal(t, true, r["truncated"])
		require.EqualValues(t, 64<<10, r["next_offset_bytes"])
		require.Contains(t, text, "read on with offset_bytes=65536 and max_bytes=65536")
	})

	t.Run("small file, whole", func(t *testing.T) {
		r, text := read(map[string]any{"path": "small.txt"})
		require.Equal(t, false, r["truncated"])
		require.Equal(t, "a\nb\n", text)
	})

	t.Run("a large byte range is a blob, with a resource URI", func(t *testing.T) {
		resp := e.Call("read_file", map[string]any{"path": "many.txt", "offset_bytes": 0})
		r := toolstest.Receipt(t, resp)
		blob := r["blob"].(map[string]any)
		require.Equal(t, false, r["truncated"], "the blob holds it all")
		uri := blob["uri"].(string)
		require.True(t, strings.HasPrefix(uri, tools.BlobURIPrefix))
		require.Contains(t, resp.Text, "read it as the MCP resource "+uri)
	})
}
