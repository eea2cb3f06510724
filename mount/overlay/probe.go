//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	probeOnce sync.Once
	probeErr  error
)

// Available reports whether this process can mount the overlay backend:
// it runs as root, the kernel has overlayfs with data-only lower layers
// (Linux 6.5 or later) and a tiny test mount of that shape works. The
// probe runs once per process; the error says what is missing.
func Available() error {
	probeOnce.Do(func() { probeErr = probe() })
	return probeErr
}

func probe() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the overlay backend needs root (mount(2) and trusted.* attributes); this process runs as uid %d: use the FUSE backend", os.Geteuid())
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		rel := unix.ByteSliceToString(u.Release[:])
		var major, minor int
		if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err == nil && (major < 6 || major == 6 && minor < 5) {
			return fmt.Errorf("the overlay backend needs Linux 6.5 or later (data-only lower layers); this kernel is %s: use the FUSE backend", rel)
		}
	}
	dir, err := os.MkdirTemp("", "vfsd-overlay-probe-")
	if err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	defer os.RemoveAll(dir)
	sub := func(s string) string { return filepath.Join(dir, s) }
	for _, d := range []string{"meta", "data/ab", "upper", "work", "mnt"} {
		if err := os.MkdirAll(sub(d), 0o700); err != nil {
			return fmt.Errorf("overlay probe: %w", err)
		}
	}
	if err := os.WriteFile(sub("data/ab/blob"), []byte("ok"), 0o444); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	f := sub("meta/f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	if err := os.Truncate(f, 2); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	if err := unix.Setxattr(f, xattrMetacopy, nil, 0); err != nil {
		return fmt.Errorf("the overlay backend needs trusted.* extended attributes on %s: %v; use the FUSE backend", os.TempDir(), err)
	}
	if err := unix.Setxattr(f, xattrRedirect, []byte("/ab/blob"), 0); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	opts := layerOptions(sub("meta"), sub("data"), sub("upper"), sub("work"))
	if err := unix.Mount("vfsd-probe", sub("mnt"), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("this kernel cannot mount overlayfs with a data-only lower layer (%v); use the FUSE backend", err)
	}
	defer unix.Unmount(sub("mnt"), unix.MNT_DETACH)
	got, err := os.ReadFile(sub("mnt/f"))
	if err != nil || string(got) != "ok" {
		return fmt.Errorf("overlayfs here does not follow redirects into data-only layers (read %q, %v); use the FUSE backend", got, err)
	}
	return nil
}

// layerOptions are the mount options of an overlay of meta over the
// data-only layer data, with upper and work (read-only without upper).
func layerOptions(meta, data, upper, work string) string {
	o := "lowerdir=" + meta + "::" + data + ",metacopy=on,redirect_dir=on,index=off,xino=auto"
	if upper != "" {
		o += ",upperdir=" + upper + ",workdir=" + work
	}
	return o
}

// checkPath refuses paths overlayfs's option syntax cannot carry.
func checkPath(p string) error {
	if strings.ContainsAny(p, ",:\\\n") {
		return fmt.Errorf("the overlay backend cannot use %q: overlayfs options cannot hold ',', ':' or '\\' in paths; choose a data directory without them", p)
	}
	return nil
}
