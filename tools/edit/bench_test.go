package edit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goFile returns an n-line Go-like file whose lines are all distinct.
func goFile(n int) string {
	var b strings.Builder
	for i := 0; i < n; i += 5 {
		fmt.Fprintf(&b, "func handler%d(w http.ResponseWriter, r *http.Request) {\n", i)
		fmt.Fprintf(&b, "\tif err := process(r.Context(), %d); err != nil {\n", i)
		fmt.Fprintf(&b, "\t\thttp.Error(w, \"failed %d\", http.StatusInternalServerError)\n", i)
		fmt.Fprintf(&b, "\t}\n")
		fmt.Fprintf(&b, "}\n")
	}
	return b.String()
}

func BenchmarkExact10k(b *testing.B) {
	content := goFile(10_000)
	edits := one("\tif err := process(r.Context(), 5000); err != nil {\n", "\tif err := process(ctx, 5000); err != nil {\n")
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := Apply(content, edits); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrim10k(b *testing.B) {
	content := goFile(10_000)
	// Indented with spaces instead of the file's tabs: found by the trim pass.
	edits := one("    if err := process(r.Context(), 5000); err != nil {\n        http.Error(w, \"failed 5000\", http.StatusInternalServerError)\n",
		"    if err := process(ctx, 5000); err != nil {\n        http.Error(w, \"oops\", http.StatusInternalServerError)\n")
	r, err := Apply(content, edits)
	require.NoError(b, err)
	require.Equal(b, "trim", r.Edits[0].Pass)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := Apply(content, edits); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNotFound10k(b *testing.B) {
	content := goFile(10_000)
	old := "func handler5000(w http.ResponseWriter, req *http.Request) {\n\tif err := process(req.Context(), 5000); err != nil {\n\t\thttp.Error(w, \"failure 5000\", 500)\n\t}\n}\n"
	edits := one(old, "x")
	_, err := Apply(content, edits)
	var nf *NotFoundError
	require.ErrorAs(b, err, &nf)
	require.Equal(b, 5001, nf.Closest.StartLine)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := Apply(content, edits); err == nil {
			b.Fatal("found")
		}
	}
}

// BenchmarkNotFoundLongOld10k searches 10,000 lines for a 400-line
// old_string: the window scan's worst realistic case.
func BenchmarkNotFoundLongOld10k(b *testing.B) {
	content := goFile(10_000)
	lines := strings.SplitAfter(content, "\n")
	old := strings.Join(lines[3000:3400], "") + "extra\n"
	old = strings.Replace(old, "handler3100", "handler3100x", 1)
	edits := one(old, "x")
	_, err := Apply(content, edits)
	var nf *NotFoundError
	require.ErrorAs(b, err, &nf)
	require.Equal(b, 3001, nf.Closest.StartLine)
	for b.Loop() {
		if _, err := Apply(content, edits); err == nil {
			b.Fatal("found")
		}
	}
}
