package posfilesystem_test

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRead reads a 64 MiB file of 2 Mi lines through the contract:
// a 50-line range near its start, one at its end, and the whole file;
// and a 1 MiB file read and written whole.
func BenchmarkRead(b *testing.B) {
	var sb strings.Builder
	const lines = 2 << 20
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&sb, "line %026d\n", i)
	}
	e := newEnv(b, nil, map[string]string{"big.log": sb.String(), "small.log": sb.String()[:1<<20]})
	for _, bc := range []struct{ name, params string }{
		{"range_head", `{"action":"read","path":"big.log","start_line":100,"line_count":50}`},
		{"range_tail", fmt.Sprintf(`{"action":"read","path":"big.log","start_line":%d,"line_count":50}`, lines-50)},
		{"whole", `{"action":"read","path":"big.log","max_size_mb":100}`},
		{"whole_1MiB", `{"action":"read","path":"small.log"}`},
		{"write_1MiB", fmt.Sprintf(`{"action":"write","path":"out.log","content":%q}`, sb.String()[:1<<20])},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.t = b
				e.ok(bc.params)
			}
		})
	}
}
