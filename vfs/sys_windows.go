package vfs

// fdLimit reports 0 (unknown): Windows has no per-process descriptor limit
// short of memory, so the cache keeps its default bound.
func fdLimit() uint64 { return 0 }
