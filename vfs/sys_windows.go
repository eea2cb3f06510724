package vfs

import "os"

// fdLimit reports 0 (unknown): Windows has no per-process descriptor limit
// short of memory, so the cache keeps its default bound.
func fdLimit() uint64 { return 0 }

// syncDir does nothing on Windows: a directory cannot be flushed through a
// handle (FlushFileBuffers refuses it), and NTFS journals its entries.
func syncDir(dir string) error { return nil }

// linkCount reports 1: the stores never link a session's files on Windows.
func linkCount(*os.File) (uint64, error) { return 1, nil }
