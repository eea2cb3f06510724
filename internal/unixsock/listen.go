// Package unixsock listens on Unix sockets that only their owner can
// reach: the daemon's API socket and the volume plugin's.
package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// maxSocketPath is the longest path a Unix socket may have on Linux.
const maxSocketPath = 107

// Listen listens on a Unix socket at path with mode 0600 from the
// start: the socket is bound in a fresh private directory, restricted, and
// renamed into place, so nobody else can connect in between. A stale
// socket is replaced; a live one means another daemon serves there. flag
// is the option that names the path, for the errors ("--socket").
func Listen(path, flag string) (*net.UnixListener, error) {
	if len(path) > maxSocketPath-16 {
		return nil, fmt.Errorf("socket path %s is %d bytes; Unix sockets allow %d (with room for a temporary name, %d): choose a shorter %s", path, len(path), maxSocketPath, maxSocketPath-16, flag)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another %s", path, flag)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another vfsd is serving on %s; stop it first, or choose another %s", path, flag)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
	}
	tmpDir, err := os.MkdirTemp(dir, ".s")
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	return ln, nil
}
