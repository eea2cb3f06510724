package ignore

import (
	"testing"
)

// benchStack is a three-level stack of about 30 patterns each, of the kinds
// real projects write: names, extensions, directories, anchored paths, "**"
// and negations.
func benchStack() *Stack {
	rootRules := Parse([]byte(`# build output
/build/
/dist/
/out/
/bin/
*.o
*.a
*.so
*.dylib
*.exe
*.test
*.out
*.log
!important.log
*.tmp
*.swp
*~
.DS_Store
Thumbs.db
.idea/
.vscode/
node_modules/
coverage/
**/testdata/golden/*.actual
**/.cache/**
vendor/**/*.md
!vendor/**/README.md
docs/_site/
/config/local.*
.env
.env.*
!.env.example
`))
	pkgRules := Parse([]byte(`/generated/
*.pb.go
!keep.pb.go
*_string.go
mock_*.go
/fixtures/large/
**/snapshots/
*.[oa]
*.py[cod]
__pycache__/
*.egg-info/
.tox/
.pytest_cache/
.mypy_cache/
*.class
*.jar
target/
*.iml
/local/
tmp/
*.bak
*.orig
*.rej
core
core.[0-9]*
!core.go
*.prof
*.pprof
cpu.out
mem.out
`))
	leafRules := Parse([]byte(`*.gen.ts
*.js.map
/lib/
/es/
*.tsbuildinfo
.eslintcache
.parcel-cache/
.next/
.nuxt/
storybook-static/
*.snap
!__snapshots__/*.snap
npm-debug.log*
yarn-debug.log*
yarn-error.log*
.pnpm-debug.log*
report.[0-9]*.[0-9]*.[0-9]*.[0-9]*.json
*.lcov
.nyc_output/
bower_components/
jspm_packages/
web_modules/
.yarn-integrity
.cache/
public/build/
*.local
!*.local.example
src/**/*.generated.*
[Dd]ebug/
[Rr]elease/
`))
	var s *Stack
	return s.Push("", rootRules).Push("services/api", pkgRules).Push("services/api/web", leafRules)
}

var benchPaths = []struct {
	path  string
	isDir bool
}{
	{"services/api/web/src/components/Button.tsx", false},
	{"services/api/web/src/components/Button.gen.ts", false},
	{"services/api/web/lib", true},
	{"services/api/web/src/app/generated/types.generated.ts", false},
	{"services/api/web/Debug", true},
	{"services/api/web/main.js.map", false},
	{"services/api/web/README.md", false},
	{"services/api/web/server.log", false},
	{"services/api/web/node_modules", true},
	{"services/api/web/src/index.ts", false},
}

// BenchmarkIgnored decides paths against a three-level stack of about 30
// patterns each; ns/op is one Ignored call.
func BenchmarkIgnored(b *testing.B) {
	s := benchStack()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := &benchPaths[i%len(benchPaths)]
		s.Ignored(p.path, p.isDir)
	}
}
