package tools

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/vfs"
)

// TestScanLinesMatchesSplit: the chunked line scan finds the same window
// as splitting the whole file into lines, across chunk boundaries.
func TestScanLinesMatchesSplit(t *testing.T) {
	defer func(n int) { lineScanChunk = n }(lineScanChunk)
	lineScanChunk = 7
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "\n", "\n", "héllo", "ü\n", "\r\n", "longer line"}
	for iter := range 3000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		data := []byte(b.String())
		lines := splitLines(data)
		start := 1 + rng.IntN(len(lines)+2)
		count := -1
		if rng.IntN(2) == 0 {
			count = 1 + rng.IntN(5)
		}
		maxRead := int64(1 + rng.IntN(40))
		w, err := scanLines(bytes.NewReader(data), int64(len(data)), start, count, maxRead, vfs.EncodingUnknown)
		require.NoError(t, err)
		require.Equal(t, len(lines), w.totalLines, "iter %d %q", iter, data)
		require.Equal(t, vfs.DetectEncoding(data) == vfs.EncodingBinary, w.binary)
		if start > len(lines) {
			// Past the end: readLines refuses both.
			require.True(t, w.startOff < 0 || w.startOff == int64(len(data)), "iter %d %q start %d", iter, data, start)
			continue
		}
		end := len(lines)
		if count >= 0 {
			end = min(start-1+count, len(lines))
		}
		off := int64(len(strings.Join(lines[:start-1], "")))
		sel := strings.Join(lines[start-1:end], "")
		wantEnd := end
		if int64(len(sel)) > maxRead {
			sel = sel[:maxRead]
			wantEnd = -1
		}
		require.Equal(t, off, w.startOff, "iter %d %q start %d count %d", iter, data, start, count)
		require.Equal(t, off+int64(len(sel)), w.endOff, "iter %d %q start %d count %d", iter, data, start, count)
		require.Equal(t, wantEnd, w.endLine, "iter %d %q start %d count %d", iter, data, start, count)
	}
}
