package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Preset names.
const (
	PresetDefault        = "default"
	PresetWeakIncentives = "weakincentives"
	PresetX07            = "x07"
	PresetAOS            = "aos"
)

// DefaultInlineBytes is the payload size above which the default policy
// returns output as a blob.
const DefaultInlineBytes = 64 << 10

// DefaultMaxForks is how many forks made with session tokens may be open
// at once, in all, from one session the admin created, under every preset
// but aos.
const DefaultMaxForks = 16

// DefaultCaps are the default preset's caps: every read, search and
// listing is bounded, so that no single request can make the daemon hold
// or send an unbounded amount (an MCP client over stdio drops the
// connection at 10 MiB; a grep with max_results 1000000 once returned
// 180 MB). Larger reads page with offset_bytes; larger searches narrow
// their path or glob.
func DefaultCaps() Caps {
	return Caps{
		MaxInlineBytes:  DefaultInlineBytes, // inline payloads and every list-shaped receipt
		MaxReadBytes:    64 << 20,           // one read_file window (larger ones stream into a blob)
		MaxGrepResults:  1000,               // lines or files one grep returns (default request: 100)
		MaxGlobResults:  5000,               // paths one glob returns (default request: 1000)
		MaxEntries:      5000,               // entries one list_directory returns
		MaxScannedFiles: 200_000,            // files one grep reads, after ignore rules and globs
		MaxScannedBytes: 2 << 30,            // bytes one grep reads, likewise
		MaxForks:        DefaultMaxForks,    // forks by session tokens open at once
	}
}

var presets = map[string]func() *Policy{
	// default: symlinks followed within the session, and DefaultCaps.
	PresetDefault: func() *Policy {
		return &Policy{Name: PresetDefault, Symlinks: SymlinksWithinRoot, Caps: DefaultCaps()}
	},
	// weakincentives: the limits of the weakincentives VFS tools —
	// 48,000-character writes, at most 16 path segments of at most 80
	// characters, ASCII-only paths.
	PresetWeakIncentives: func() *Policy {
		return &Policy{Name: PresetWeakIncentives, Symlinks: SymlinksWithinRoot, ASCIIOnly: true,
			Caps: Caps{MaxWriteChars: 48000, MaxDepth: 16, MaxSegmentLen: 80, MaxInlineBytes: DefaultInlineBytes,
				MaxForks: DefaultMaxForks}}
	},
	// x07: hidden paths and symlinks denied, ".." rejected, and error codes
	// also reported as numbers (60001–60020).
	PresetX07: func() *Policy {
		return &Policy{Name: PresetX07, Symlinks: SymlinksDeny, DenyHidden: true, RejectDotDot: true,
			NumericCodes: true, Caps: Caps{MaxInlineBytes: DefaultInlineBytes, MaxForks: DefaultMaxForks}}
	},
	// aos: no limits at all (forks included); symlinks followed anywhere in
	// the session.
	PresetAOS: func() *Policy {
		return &Policy{Name: PresetAOS, Symlinks: SymlinksAllow}
	},
}

// Presets returns the preset names, sorted.
func Presets() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns a fresh copy of the named preset; "" is the default.
func Preset(name string) (*Policy, error) {
	if name == "" {
		name = PresetDefault
	}
	mk, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy preset %q; use one of %s", name, strings.Join(Presets(), ", "))
	}
	return mk(), nil
}

// Default returns the default policy.
func Default() *Policy {
	p, _ := Preset(PresetDefault)
	return p
}
