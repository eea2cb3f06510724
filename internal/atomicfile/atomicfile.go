// Package atomicfile writes files atomically: a temporary file in the same
// directory, synced, then renamed over the target, so readers see the old
// content or the new, never a torn one. On Unix it is renameio's; renameio
// does not build for Windows, where this package does the same with
// os.Rename (MoveFileEx with MOVEFILE_REPLACE_EXISTING).
package atomicfile
