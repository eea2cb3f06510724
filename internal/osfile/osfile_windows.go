package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// OpenFile is os.OpenFile, opening with FILE_SHARE_DELETE as well as
// FILE_SHARE_READ|FILE_SHARE_WRITE, so that the file can be removed or
// renamed while open. Flags: O_RDONLY, O_WRONLY, O_RDWR, O_CREATE, O_EXCL
// and O_TRUNC; O_APPEND and O_SYNC are refused (no caller needs them). A
// file created without the owner write bit in perm is read-only, as with
// os.OpenFile. Directories cannot be opened with it.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if name == "" {
		return nil, &os.PathError{Op: "open", Path: name, Err: windows.ERROR_FILE_NOT_FOUND}
	}
	if flag&(os.O_APPEND|os.O_SYNC) != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("osfile: O_APPEND and O_SYNC are not supported; use os.OpenFile")}
	}
	p, err := windows.UTF16PtrFromString(fixLongPath(name))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var access uint32 = windows.GENERIC_READ
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	case os.O_RDWR:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	var create uint32 = windows.OPEN_EXISTING
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&(os.O_CREATE|os.O_TRUNC) == os.O_CREATE|os.O_TRUNC:
		create = windows.CREATE_ALWAYS
	case flag&os.O_CREATE != 0:
		create = windows.OPEN_ALWAYS
	case flag&os.O_TRUNC != 0:
		create = windows.TRUNCATE_EXISTING
	}
	var attrs uint32 = windows.FILE_ATTRIBUTE_NORMAL
	if flag&os.O_CREATE != 0 && perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, create, attrs, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// fixLongPath gives an absolute path of 248 characters or more the \\?\
// prefix that lifts the MAX_PATH limit, as the os package does for its own
// opens. Such a path is taken literally, so it is cleaned first.
func fixLongPath(name string) string {
	if len(name) < 248 || !filepath.IsAbs(name) || strings.HasPrefix(name, `\\?\`) {
		return name
	}
	name = filepath.Clean(name)
	if strings.HasPrefix(name, `\\`) { // UNC: \\server\share\...
		return `\\?\UNC\` + name[2:]
	}
	return `\\?\` + name
}
