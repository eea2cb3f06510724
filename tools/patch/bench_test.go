package patch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vfsd/vfsd/tools/patch"
	"github.com/vfsd/vfsd/tools/patch/patchtest"
)

// benchInput returns a 5000-line file and a 200-line patch of 40 chunks
// spread over it, each an "@@" line, two context lines, a removed and an
// added line.
func benchInput() (string, string) {
	var file strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&file, "    value_%04d = compute(%d)  # line %d\n", i, i, i+1)
	}
	var p strings.Builder
	p.WriteString("*** Begin Patch\n*** Update File: big.py\n")
	for c := range 40 {
		i := 60 + c*120
		fmt.Fprintf(&p, "@@ value_%04d = compute(%d)  # line %d\n", i-5, i-5, i-4)
		fmt.Fprintf(&p, "     value_%04d = compute(%d)  # line %d\n", i-1, i-1, i)
		fmt.Fprintf(&p, "-    value_%04d = compute(%d)  # line %d\n", i, i, i+1)
		fmt.Fprintf(&p, "+    value_%04d = compute(%d) * 2  # changed\n", i, i)
		fmt.Fprintf(&p, "     value_%04d = compute(%d)  # line %d\n", i+1, i+1, i+2)
	}
	p.WriteString("*** End Patch\n")
	return file.String(), p.String()
}

func BenchmarkPlan(b *testing.B) {
	file, text := benchInput()
	tree := patchtest.NewTree(map[string][]byte{"big.py": []byte(file)}, nil)
	p, err := patch.Parse(text)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := patch.Plan(p, tree)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Changes) != 1 || res.Changes[0].Diff == "" {
			b.Fatal("unexpected result")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	_, text := benchInput()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := patch.Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}
