//go:build linux

// Command sandboxprobe tries, from inside `vfsd run`'s sandbox, what an
// escaping command would try, and prints one line per probe:
// "PROBE NAME ok" when the attempt succeeded, "PROBE NAME denied: ERR" when
// it failed. The end-to-end tests of vfsd run (package tests) read it.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	args := os.Args[1:]
	for len(args) > 0 {
		name := args[0]
		var arg string
		if len(args) > 1 {
			arg = args[1]
		}
		var err error
		switch name {
		case "connect-unix": // connect to a Unix socket
			var c net.Conn
			if c, err = net.DialTimeout("unix", arg, 2*time.Second); err == nil {
				c.Close()
			}
		case "connect-tcp": // connect to a TCP address
			var c net.Conn
			if c, err = net.DialTimeout("tcp", arg, 2*time.Second); err == nil {
				c.Close()
			}
		case "http-sessions": // list the daemon's sessions over TCP with what token there is
			err = listSessions(arg)
		case "read": // read a file or list a directory
			var fi os.FileInfo
			if fi, err = os.Stat(arg); err == nil {
				if fi.IsDir() {
					var names []string
					if names, err = readDir(arg); err == nil && len(names) == 0 {
						err = fmt.Errorf("empty directory")
					}
				} else {
					_, err = os.ReadFile(arg)
				}
			}
		case "open-read": // open a file for reading, reading nothing
			var fd int
			if fd, err = unix.Open(arg, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		case "ptrace-privileged": // open the memory of a thread that holds capabilities
			err = ptracePrivileged()
		case "open-write": // open a file for writing, writing nothing
			var fd int
			if fd, err = unix.Open(arg, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		case "write": // create a file
			err = os.WriteFile(arg, []byte("escaped\n"), 0o644)
		case "tiocsti": // push a character into the terminal on stdin
			// TIOCSTI reads one byte of the int: '#' on little-endian.
			err = unix.IoctlSetPointerInt(0, unix.TIOCSTI, '#')
		case "umount": // lazily unmount a path
			err = unix.Unmount(arg, unix.MNT_DETACH)
		case "remount-rw": // make the bind at a path writable
			err = unix.Mount("", arg, "", unix.MS_REMOUNT|unix.MS_BIND, "")
		case "caps": // print the capability sets
			var b []byte
			if b, err = os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, "Cap") {
						fmt.Println("CAPS", strings.ReplaceAll(l, "\t", " "))
					}
				}
			}
		case "env": // print the VFSD_ environment
			for _, kv := range os.Environ() {
				if strings.HasPrefix(kv, "VFSD_") || strings.HasPrefix(kv, "TMPDIR=") {
					fmt.Println("ENV", kv)
				}
			}
		case "mktemp": // create a temporary file where TMPDIR says
			var f *os.File
			if f, err = os.CreateTemp("", "probe"); err == nil {
				f.Close()
				os.Remove(f.Name())
			}
		default:
			fmt.Fprintln(os.Stderr, "sandboxprobe: unknown probe", name)
			os.Exit(2)
		}
		if err == nil {
			fmt.Printf("PROBE %s %s ok\n", name, arg)
		} else {
			fmt.Printf("PROBE %s %s denied: %v\n", name, arg, err)
		}
		if len(args) < 2 {
			break
		}
		args = args[2:]
	}
}

// ptracePrivileged looks for a process in sight with a thread that holds
// a capability and a thread (any: they share the memory) whose memory
// this process may open, as ptrace would: it succeeds when it finds one.
func ptracePrivileged() error {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if p == fmt.Sprintf("/proc/%d", os.Getpid()) {
			continue
		}
		tasks, _ := filepath.Glob(p + "/task/[0-9]*")
		privileged := false
		for _, t := range tasks {
			b, _ := os.ReadFile(t + "/status")
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && (k == "CapEff" || k == "CapPrm") && strings.Trim(strings.TrimSpace(v), "0") != "" {
					privileged = true
				}
			}
		}
		if !privileged {
			continue
		}
		for _, t := range tasks {
			if fd, err := unix.Open(t+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
				return nil
			}
		}
	}
	return fmt.Errorf("no privileged process is open to ptrace (of %d)", len(procs))
}

func readDir(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// listSessions asks a TCP daemon for its sessions with the token from the
// environment, else none; it succeeds only on 200.
func listSessions(addr string) error {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/sessions", nil)
	if err != nil {
		return err
	}
	if tok := os.Getenv("VFSD_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
