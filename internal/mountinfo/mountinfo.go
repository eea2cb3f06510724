// Package mountinfo reads /proc/self/mountinfo (proc(5)): the one parser of
// the mount table for the daemon, the overlay mount, the CLI and the tests.
//
// A line is
//
//	36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// mount ID, parent ID, major:minor, root, mount point, per-mount options,
// zero or more optional fields ended by a lone "-", then the filesystem
// type, the source and the per-superblock options. The kernel writes a
// space, tab, newline or backslash in the root, mount point, type or
// source as a backslash and three octal digits (\040 for a space); Parse
// undoes that. Superblock options are each filesystem's own text and are
// kept as written; SuperOption splits them and unescapes the values.
//
// The package is a leaf: it imports nothing of vfsd.
package mountinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Self is this process's mount table (its mount namespace's).
const Self = "/proc/self/mountinfo"

// Mount is one line of mountinfo.
type Mount struct {
	ID, Parent   int
	Dev          string   // "major:minor"
	Root         string   // the root of the mount within its filesystem, unescaped
	MountPoint   string   // unescaped, as the kernel resolved it
	Options      string   // per-mount options, as written: "rw,nosuid,relatime"
	Optional     []string // optional fields: "shared:1", "master:2", ...; nil if none
	FSType       string   // "ext4", "overlay", "fuse", "fuse.sshfs"; unescaped
	Source       string   // "/dev/sda1", "vfsd:ID", "none"; unescaped
	SuperOptions string   // per-superblock options, as the filesystem wrote them
}

// ParseLine parses one line (without its newline).
func ParseLine(line string) (Mount, error) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return Mount{}, fmt.Errorf("mountinfo line %q: no \" - \" separator", line)
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 6 || len(g) < 2 {
		return Mount{}, fmt.Errorf("mountinfo line %q: too few fields", line)
	}
	var m Mount
	var err1, err2 error
	m.ID, err1 = strconv.Atoi(f[0])
	m.Parent, err2 = strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil {
		return Mount{}, fmt.Errorf("mountinfo line %q: %w", line, err)
	}
	m.Dev = f[2]
	m.Root, m.MountPoint, m.Options = Unescape(f[3]), Unescape(f[4]), f[5]
	if len(f) > 6 {
		m.Optional = f[6:]
	}
	m.FSType, m.Source = Unescape(g[0]), Unescape(g[1])
	if len(g) > 2 {
		m.SuperOptions = g[2]
	}
	return m, nil
}

// Parse reads a mount table. A line that is no mountinfo line is skipped:
// callers look for mounts, and one line they cannot read must not hide
// the others. On a read error it returns the mounts read so far with it.
func Parse(r io.Reader) ([]Mount, error) {
	var out []Mount
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimSuffix(line, "\n"); line != "" {
			if m, perr := ParseLine(line); perr == nil {
				out = append(out, m)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// Read reads this process's mount table (Self). On a read error it
// returns the mounts read so far with it.
func Read() ([]Mount, error) {
	f, err := os.Open(Self)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// SuperOption returns the values of the superblock option key, unescaped,
// in order ("upperdir" of "rw,lowerdir=/a,upperdir=/b" is ["/b"]); an
// option without "=" has the value "". Nil if the option is absent.
func (m Mount) SuperOption(key string) []string {
	var out []string
	for opt := range strings.SplitSeq(m.SuperOptions, ",") {
		k, v, _ := strings.Cut(opt, "=")
		if k == key {
			out = append(out, Unescape(v))
		}
	}
	return out
}

// Unescape decodes the kernel's octal escapes: a backslash and three octal
// digits stand for one byte (\040 a space, \011 a tab, \012 a newline,
// \134 a backslash). Any other backslash is kept as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && octal(s[i+1]) && octal(s[i+2]) && octal(s[i+3]) && s[i+1] <= '3' {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(c byte) bool { return c >= '0' && c <= '7' }
