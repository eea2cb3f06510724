//go:build linux && !vfsd_osroot

package hostmount

import (
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportSpecialFiles: Linux imports fifos and sockets as nodes of
// their kind.
func TestImportSpecialFiles(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *env)
		mounts func(e *env) []Mount
		want   map[string]string
		skips  map[string]string // host path relative to root → reason
	}{
		{
			name: "fifos and sockets are imported as nodes of their kind",
			setup: func(e *env) {
				e.write("p/ok", "ok")
				require.NoError(t, syscall.Mkfifo(filepath.Join(e.root, "p/fifo"), 0o644))
				l, err := net.Listen("unix", filepath.Join(e.root, "p/sock"))
				require.NoError(t, err)
				t.Cleanup(func() { l.Close() })
			},
			mounts: func(e *env) []Mount { return []Mount{{HostPath: filepath.Join(e.root, "p"), MountPath: "/"}} },
			want:   map[string]string{"": "dir", "ok": "ok", "fifo": "fifo", "sock": "socket"},
			skips:  map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			got, rep := e.load(tt.mounts(e)...)
			require.Equal(t, tt.want, got)
			wantSkips := map[string]string{}
			for rel, reason := range tt.skips {
				wantSkips[filepath.Join(e.root, rel)] = reason
			}
			require.Equal(t, wantSkips, skipsOf(rep))
		})
	}
}
