package vfs

import (
	"fmt"
	"os"
	"syscall"
)

// Quota bounds what a session may hold. The engine enforces it on every
// change, whoever makes it — tools, the FUSE mount, batches — so that a
// session cannot fill the disk it lives on. Zero fields are unbounded.
//
// Only growth is refused: a change that leaves the session over its quota
// but smaller than before (a removal, a truncation) always goes through, so
// a session put over a lowered quota can still clean up.
type Quota struct {
	// MaxBytes bounds the total size of the session's regular files, as
	// Tree.Bytes counts them (logical sizes: a sparse file counts whole),
	// including bytes written through open handles but not committed yet.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxNodes bounds the number of files, directories and symlinks in the
	// session (the root not counted).
	MaxNodes int64 `json:"max_nodes,omitempty"`
	// MaxHistoryBytes bounds the content the session's history keeps for
	// rewinds beyond its current files: past it the oldest history is
	// dropped. MaxBytes when zero; unbounded when both are zero.
	MaxHistoryBytes int64 `json:"max_history_bytes,omitempty"`
}

// Quota returns the session's quota.
func (s *Session) Quota() Quota { return s.opts.Quota }

// historyBudget is the bound on the content the history keeps.
func (q Quota) historyBudget() int64 {
	if q.MaxHistoryBytes > 0 {
		return q.MaxHistoryBytes
	}
	return q.MaxBytes
}

// quotaErr reports a change refused by the quota. It carries
// syscall.EDQUOT, which the FUSE mount hands to the writing process.
func quotaErr(op string, p Path, what string, found, limit int64, hint string) error {
	return &Error{Op: op, Path: p.String(), Code: CodeTooLarge, Err: syscall.EDQUOT,
		Msg: fmt.Sprintf("the session would hold %d %s, over its quota of %d; %s", found, what, limit, hint)}
}

// checkQuotaLocked refuses event e, which takes the tree from old to t, if
// it grows the session past its quota. Events that settle growth already
// accounted for (a commit of handle writes, which were reserved as they
// were written) or that change no size are not checked. s.mu is held.
func (s *Session) checkQuotaLocked(op string, old, t Tree, e *Event) error {
	q := s.opts.Quota
	switch e.Op {
	case OpCommit, OpCopyUp, OpSeal, OpSnapshotted:
		return nil
	}
	if q.MaxNodes > 0 && t.Len() > old.Len() && int64(t.Len()-1) > q.MaxNodes {
		return quotaErr(op, e.Path, "files, directories and symlinks", int64(t.Len()-1), q.MaxNodes,
			"remove files you no longer need")
	}
	if q.MaxBytes > 0 && t.Bytes() > old.Bytes() {
		if total := t.Bytes() + s.pending.Load(); total > q.MaxBytes {
			return quotaErr(op, e.Path, "bytes", total, q.MaxBytes, "remove or shorten files you no longer need")
		}
	}
	return nil
}

// reserve accounts for delta more bytes of uncommitted handle writes, and
// reports false, reserving nothing, when that would take the session past
// its byte quota. The caller holds the growing upper file's grow lock.
func (s *Session) reserve(delta int64) (int64, bool) {
	limit := s.opts.Quota.MaxBytes
	for {
		cur := s.pending.Load()
		total := s.treeBytes.Load() + cur + delta
		if total > limit {
			return total, false
		}
		if s.pending.CompareAndSwap(cur, cur+delta) {
			return total, true
		}
	}
}

// quotaBytes reports whether the session tracks bytes written through
// handles against a byte quota.
func (s *Session) quotaBytes() bool { return s.opts.Quota.MaxBytes > 0 }

// over is how far size goes past the upper file's committed size: the
// bytes its uncommitted writes add to the session.
func (uf *upperFile) over(size int64) int64 { return max(0, size-uf.committed) }

// settlePending drops uf's uncommitted growth from the session's account:
// the file was committed (its growth is now in the tree) or let go.
// uf.mu is held exclusively.
func (uf *upperFile) settlePending() {
	if uf.pending != nil {
		uf.pending.Add(-uf.over(uf.size.Load()))
	}
}

// reserveTruncateLocked refuses to set uf's size to size when that grows
// the session past its byte quota. s.mu and uf.mu are held exclusively.
func (s *Session) reserveTruncateLocked(p Path, uf *upperFile, size int64) error {
	if uf.pending == nil {
		return nil
	}
	delta := uf.over(size) - uf.over(uf.size.Load())
	if delta <= 0 {
		return nil
	}
	if total := s.tree.Bytes() + s.pending.Load() + delta; total > s.opts.Quota.MaxBytes {
		return quotaErr("truncate", p, "bytes", total, s.opts.Quota.MaxBytes, "remove or shorten files you no longer need")
	}
	return nil
}

// precheckGrowth refuses, before anything is copied up, a write of n bytes
// at off (or a truncation to off, with n 0) that plainly takes the session
// past its byte quota. It is a fast path: the write itself checks again.
func (h *Handle) precheckGrowth(op string, off, n int64) error {
	s := h.s
	if end := off + n; end > MaxFileSize || end < 0 {
		return checkFileSize(op, h.Path(), end) // Path locks: only on the way out
	}
	if !s.quotaBytes() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if h.usableLocked(op) != nil {
		return nil // the write reports it
	}
	node, _ := h.contentLocked()
	end := off + n
	if h.flags&os.O_APPEND != 0 && n > 0 {
		end = node.Size + n
	}
	if end <= node.Size {
		return nil
	}
	if total := s.tree.Bytes() + s.pending.Load() + end - node.Size; total > s.opts.Quota.MaxBytes {
		return quotaErr(op, h.path, "bytes", total, s.opts.Quota.MaxBytes, "remove or shorten files you no longer need")
	}
	return nil
}

// MaxFileSize is the largest size a file may have: ext4's limit with 4 KiB
// blocks (16 TiB). A write or truncate past it is refused as too large
// (EFBIG through the mount), before any quota is considered, as a local file
// system refuses a size it cannot hold whatever space is free.
const MaxFileSize = 1 << 44

// checkFileSize refuses a file size past MaxFileSize.
func checkFileSize(op string, p Path, size int64) error {
	if size > MaxFileSize || size < 0 { // < 0: off+n overflowed
		return newErr(CodeTooLarge, op, p, fmt.Sprintf("a file may be at most %d bytes (16 TiB); this would make it %d", int64(MaxFileSize), size))
	}
	return nil
}
