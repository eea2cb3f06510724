//go:build linux

package mounttest

import (
	"bytes"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// WatchDir calls fn once, on the first inotify event in mask in dir for
// an entry whose name skip does not reject. It returns a channel closed
// once fn ran, and a stop function.
func WatchDir(t testing.TB, dir string, mask uint32, skip func(name string) bool, fn func(name string)) (<-chan struct{}, func()) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	require.NoError(t, err)
	_, err = unix.InotifyAddWatch(fd, dir, mask)
	require.NoError(t, err)
	done, stop := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(fds, 20); n <= 0 {
				continue
			}
			n, err := unix.Read(fd, buf)
			if err != nil {
				continue
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if ev.Mask&mask != 0 && name != "" && !skip(name) {
					fn(name)
					close(done)
					return
				}
			}
		}
	}()
	return done, func() { once.Do(func() { close(stop) }) }
}
