package patch_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/tools/patch/patchtest"
)

// seedPatches adds the patches of the scenarios as fuzz seeds.
func seedPatches(f *testing.F, add func(text string)) {
	for _, dir := range []string{"testdata/scenarios", codexSuite} {
		scenarios, err := patchtest.Load(dir)
		if err != nil {
			f.Fatal(err)
		}
		for _, sc := range scenarios {
			add(sc.Patch)
		}
	}
	add("<<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@ x\n@@\n-y\n+z\n*** End of File\n*** End Patch\nEOF")
	add("*** Begin Patch\n*** Update File: a.txt\n*** Move to: dir\n@@\n-\n+\n*** End Patch")
}

// FuzzParse checks that Parse never panics and that what it returns is
// well formed.
func FuzzParse(f *testing.F) {
	seedPatches(f, func(text string) { f.Add(text) })
	f.Fuzz(func(t *testing.T, text string) {
		p, err := patch.Parse(text)
		lines := strings.Count(text, "\n") + 1
		if err != nil {
			var pe *patch.ParseError
			require.ErrorAs(t, err, &pe)
			require.Nil(t, p)
			require.NotEmpty(t, pe.Msg)
			require.GreaterOrEqual(t, pe.Line, 1)
			require.LessOrEqual(t, pe.Line, lines)
			return
		}
		require.NotEmpty(t, p.Hunks)
		prev := 0
		for _, h := range p.Hunks {
			require.NotEmpty(t, h.Path)
			require.Equal(t, strings.TrimSpace(h.Path), h.Path)
			require.Greater(t, h.Line, prev)
			require.LessOrEqual(t, h.Line, lines)
			prev = h.Line
			switch h.Op {
			case patch.OpAdd:
				require.True(t, h.Contents == "" || strings.HasSuffix(h.Contents, "\n"))
			case patch.OpDelete:
			case patch.OpUpdate:
				require.NotEmpty(t, h.Chunks)
				for _, c := range h.Chunks {
					require.GreaterOrEqual(t, c.Line, prev)
					prev = c.Line
					for _, u := range c.Unchanged {
						require.Equal(t, c.Old[u[0]], c.New[u[1]])
					}
				}
			default:
				t.Fatalf("unknown op %q", h.Op)
			}
		}
	})
}

// FuzzPlan plans fuzzed patches against a small tree: Plan must never
// panic, must fail with a *RejectError, and a result it returns must apply
// cleanly, leaving every updated file ended by a newline.
func FuzzPlan(f *testing.F) {
	seedPatches(f, func(text string) { f.Add(text, "line1\nline2\n") })
	f.Add("*** Begin Patch\n*** Update File: a.txt\n@@\n x\n-y\n+z\n*** End Patch", "x\r\ny\r\n")
	f.Add("*** Begin Patch\n*** Update File: a.txt\n@@ “q”\n-—\n+-\n*** End Patch", "  \"q\"\n-\n")
	f.Fuzz(func(t *testing.T, text, content string) {
		p, err := patch.Parse(text)
		if err != nil {
			return
		}
		tree := patchtest.NewTree(map[string][]byte{
			"a.txt":         []byte(content),
			"dir/b.txt":     []byte("one\ntwo\nthree\n"),
			"dir/sub/c.txt": []byte("c\r\n"),
			"bin":           {0, 1, 2},
		}, []string{"empty"})
		before := texts(tree.Files)
		res, err := patch.Plan(p, tree)
		require.Equal(t, before, texts(tree.Files), "Plan changed its input")
		if err != nil {
			var re *patch.RejectError
			require.ErrorAs(t, err, &re)
			require.Nil(t, res)
			require.NotEmpty(t, re.Msg)
			return
		}
		require.Len(t, res.Changes, len(p.Hunks))
		for _, c := range res.Changes {
			if c.Op == patch.OpUpdate {
				require.True(t, len(c.New) == 0 || c.New[len(c.New)-1] == '\n', "%q", c.New)
			}
		}
		require.NoError(t, tree.Apply(res))
	})
}

// TestFuzzCorpusKept makes sure the kept corpus is where go test finds it.
func TestFuzzCorpusKept(t *testing.T) {
	for _, name := range []string{"FuzzParse", "FuzzPlan"} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", name))
		if errors.Is(err, os.ErrNotExist) {
			t.Skipf("no kept corpus for %s", name)
		}
		require.NoError(t, err)
		require.NotEmpty(t, entries, name)
	}
}
