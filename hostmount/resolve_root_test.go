//go:build !linux || vfsd_osroot

package hostmount

import (
	"io/fs"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTree is a host tree for resolveBeneath: path → "dir", "file" or
// "-> target". It runs where the host cannot make symlinks (Wine).
type fakeTree map[string]string

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

func (t fakeTree) Lstat(name string) (fs.FileInfo, error) {
	v, ok := t[name]
	switch {
	case !ok:
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	case v == "dir":
		return fakeInfo{name, fs.ModeDir | 0o755}, nil
	case v == "file":
		return fakeInfo{name, 0o644}, nil
	}
	return fakeInfo{name, fs.ModeSymlink | 0o777}, nil
}

func (t fakeTree) Readlink(name string) (string, error) {
	v := t[name]
	if len(v) < 3 || v[:3] != "-> " {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return v[3:], nil
}

// TestResolveBeneath: symlinks are followed while they stay beneath the
// root, as openat2's RESOLVE_BENEATH does; ".." above the root and
// absolute targets lead outside; loops and dangling links are reported.
func TestResolveBeneath(t *testing.T) {
	tree := fakeTree{
		"a": "dir", "a/f": "file", "a/b": "dir", "a/b/g": "file",
		"a/up":       "-> ..",
		"a/sibling":  "-> ../c/h",
		"c":          "dir",
		"c/h":        "file",
		"a/escape":   "-> ../../outside/secret",
		"a/deep":     "-> b/../../../x",
		"a/abs":      "-> /etc/passwd",
		"a/winabs":   `-> C:\Windows\win.ini`,
		"a/unc":      `-> \\server\share\x`,
		"a/rooted":   `-> \x`,
		"a/loop1":    "-> loop2",
		"a/loop2":    "-> loop1",
		"a/dangling": "-> nowhere",
		"a/chain":    "-> up/a/sibling",
		"a/viafile":  "-> f/x",
		"a/dot":      "-> .",
		"a/bslash":   `-> b\g`,
	}
	tests := []struct {
		rel, want string
		err       error
	}{
		{"a/f", "a/f", nil},
		{"a/./b/../f", "a/f", nil},
		{"a/up", ".", nil},
		{"a/up/c/h", "c/h", nil},
		{"a/sibling", "c/h", nil},
		{"a/chain", "c/h", nil},
		{"a/dot/dot/f", "a/f", nil},
		{"..", "", errOutside},
		{"a/../..", "", errOutside},
		{"a/escape", "", errOutside},
		{"a/deep", "", errOutside},
		{"a/abs", "", errOutside},
		{"a/loop1", "", errLoop},
		{"a/dangling", "", fs.ErrNotExist},
		{"a/viafile", "", errNotDir},
	}
	type tc = struct {
		rel, want string
		err       error
	}
	if runtime.GOOS == "windows" {
		// Volume, UNC and rooted targets are absolute; \ separates.
		tests = append(tests, tc{"a/winabs", "", errOutside}, tc{"a/unc", "", errOutside}, tc{"a/rooted", "", errOutside},
			tc{"a/bslash", "a/b/g", nil})
	} else {
		// Elsewhere they are relative names that do not exist.
		tests = append(tests, tc{"a/winabs", "", fs.ErrNotExist}, tc{"a/unc", "", fs.ErrNotExist}, tc{"a/bslash", "", fs.ErrNotExist})
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, err := resolveBeneath(tree, tt.rel)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
