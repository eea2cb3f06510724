package mountinfo_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vfsd/vfsd/internal/mountinfo"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       mountinfo.Mount
	}{
		{
			name: "proc(5) example",
			line: `36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue`,
			want: mountinfo.Mount{ID: 36, Parent: 35, Dev: "98:0", Root: "/mnt1", MountPoint: "/mnt/parent", Options: "rw,noatime",
				Optional: []string{"master:1"}, FSType: "ext3", Source: "/dev/root", SuperOptions: "rw,errors=continue"},
		},
		{
			name: "no optional fields",
			line: `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw`,
			want: mountinfo.Mount{ID: 22, Parent: 1, Dev: "0:21", Root: "/", MountPoint: "/proc", Options: "rw,nosuid,nodev,noexec,relatime",
				FSType: "proc", Source: "proc", SuperOptions: "rw"},
		},
		{
			name: "several optional fields",
			line: `100 29 0:50 / /run/a rw shared:7 master:3 propagate_from:2 unbindable - tmpfs tmpfs rw,size=1024k`,
			want: mountinfo.Mount{ID: 100, Parent: 29, Dev: "0:50", Root: "/", MountPoint: "/run/a", Options: "rw",
				Optional: []string{"shared:7", "master:3", "propagate_from:2", "unbindable"}, FSType: "tmpfs", Source: "tmpfs", SuperOptions: "rw,size=1024k"},
		},
		{
			name: "escaped mount point, root and source",
			line: `501 30 0:77 /sub\040dir /tmp/my\040dir\011tab\012nl\134bs rw,nosuid shared:300 - fuse vfsd:s\040p rw,user_id=0`,
			want: mountinfo.Mount{ID: 501, Parent: 30, Dev: "0:77", Root: "/sub dir", MountPoint: "/tmp/my dir\ttab\nnl\\bs", Options: "rw,nosuid",
				Optional: []string{"shared:300"}, FSType: "fuse", Source: "vfsd:s p", SuperOptions: "rw,user_id=0"},
		},
		{
			name: "a mount point that looks like the separator",
			line: `7 1 0:5 / /a\040-\040b rw - fuse.sshfs host:/x rw`,
			want: mountinfo.Mount{ID: 7, Parent: 1, Dev: "0:5", Root: "/", MountPoint: "/a - b", Options: "rw", FSType: "fuse.sshfs", Source: "host:/x", SuperOptions: "rw"},
		},
		{
			name: "overlay with a data-only layer",
			line: `612 30 0:90 / /srv/m\040x rw,relatime - overlay vfsd:abc rw,lowerdir=/c/meta::/blobs,upperdir=/u\040p,workdir=/w,metacopy=on`,
			want: mountinfo.Mount{ID: 612, Parent: 30, Dev: "0:90", Root: "/", MountPoint: "/srv/m x", Options: "rw,relatime", FSType: "overlay",
				Source: "vfsd:abc", SuperOptions: `rw,lowerdir=/c/meta::/blobs,upperdir=/u\040p,workdir=/w,metacopy=on`},
		},
		{
			name: "no superblock options",
			line: `8 1 0:6 / /x rw - weird none`,
			want: mountinfo.Mount{ID: 8, Parent: 1, Dev: "0:6", Root: "/", MountPoint: "/x", Options: "rw", FSType: "weird", Source: "none"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := mountinfo.ParseLine(c.line)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestParseLineErrors(t *testing.T) {
	for _, line := range []string{
		``,
		`36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 ext3 /dev/root rw`, // no separator
		`36 35 98:0 /mnt1 /mnt/parent - ext3 /dev/root rw`,                   // no options
		`36 35 98:0 /mnt1 /mnt/parent rw - ext3`,                             // no source
		`x 35 98:0 /mnt1 /mnt/parent rw - ext3 /dev/root rw`,                 // bad ID
		`36 y 98:0 /mnt1 /mnt/parent rw - ext3 /dev/root rw`,                 // bad parent
	} {
		_, err := mountinfo.ParseLine(line)
		require.Error(t, err, "%q", line)
	}
}

func TestSuperOption(t *testing.T) {
	m, err := mountinfo.ParseLine(`612 30 0:90 / /m rw - overlay vfsd:abc rw,lowerdir=/c/meta::/blobs,upperdir=/u\040p\054q,workdir=/w,metacopy=on,lowerdir=/second`)
	require.NoError(t, err)
	require.Equal(t, []string{"/c/meta::/blobs", "/second"}, m.SuperOption("lowerdir"))
	require.Equal(t, []string{"/u p,q"}, m.SuperOption("upperdir"), "values are unescaped after the split")
	require.Equal(t, []string{""}, m.SuperOption("rw"))
	require.Nil(t, m.SuperOption("index"))
	require.Nil(t, m.SuperOption("lower"), "keys match whole")
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		``:             ``,
		`plain`:        `plain`,
		`a\040b`:       `a b`,
		`\040`:         ` `,
		`end\040`:      `end `, // an escape at the very end
		`\134\040`:     `\ `,
		`a\04`:         `a\04`, // too short
		`a\08x`:        `a\08x`,
		`a\400`:        `a\400`, // over a byte
		`trailing\`:    `trailing\`,
		`\101\102\103`: `ABC`,
	} {
		require.Equal(t, want, mountinfo.Unescape(in), "%q", in)
	}
}

func TestParse(t *testing.T) {
	text := "22 1 0:21 / /proc rw - proc proc rw\n" +
		"garbage\n" +
		"\n" +
		`23 1 0:22 / /a\040b rw - tmpfs tmpfs rw` // no final newline
	ms, err := mountinfo.Parse(strings.NewReader(text))
	require.NoError(t, err)
	require.Len(t, ms, 2, "the line that is no mountinfo line is skipped")
	require.Equal(t, "/proc", ms[0].MountPoint)
	require.Equal(t, "/a b", ms[1].MountPoint)

	long := "24 1 0:23 / /long rw - overlay vfsd:x rw,lowerdir=" + strings.Repeat("/l", 100_000) + "\n"
	ms, err = mountinfo.Parse(strings.NewReader(long))
	require.NoError(t, err)
	require.Len(t, ms, 1, "a line longer than a bufio.Scanner's default token")

	boom := errors.New("boom")
	ms, err = mountinfo.Parse(errReader{strings.NewReader("22 1 0:21 / /proc rw - proc proc rw\n"), boom})
	require.ErrorIs(t, err, boom)
	require.Len(t, ms, 1, "the mounts read before the error are returned")
}

type errReader struct {
	r   *strings.Reader
	err error
}

func (e errReader) Read(p []byte) (int, error) {
	if e.r.Len() == 0 {
		return 0, e.err
	}
	return e.r.Read(p)
}

func TestRead(t *testing.T) {
	if _, err := os.Stat(mountinfo.Self); err != nil {
		t.Skip("no /proc/self/mountinfo here")
	}
	ms, err := mountinfo.Read()
	require.NoError(t, err)
	var root bool
	for _, m := range ms {
		root = root || m.MountPoint == "/"
	}
	require.True(t, root, "/ is mounted")
}
