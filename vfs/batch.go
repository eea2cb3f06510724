package vfs

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Batch collects changes to a session that take effect together: Commit
// applies all of them as one journal record, or none. Tools whose one call
// touches several paths (apply_patch, multi-edit) build a Batch so that a
// failure half-way, or a crash, never leaves half a change.
//
// Content is stored as it is added; the batch keeps it pinned until Commit
// or Discard. A Batch is not safe for concurrent use.
type Batch struct {
	s      *Session
	events []Event
	unpins []func()
	err    error
	done   sync.Once
}

// NewBatch starts an empty batch on s.
func (s *Session) NewBatch() *Batch { return &Batch{s: s} }

// Len returns the number of changes in the batch.
func (b *Batch) Len() int { return len(b.events) }

// Write adds a write of content to p. Only the modes Create, Overwrite and
// CreateNew are accepted; append reads the old content, which a batch
// cannot do safely.
func (b *Batch) Write(ctx context.Context, p Path, content io.Reader, opts WriteOptions) error {
	const op = "write"
	if opts.Mode == WriteAppend {
		return b.fail(newErr(CodeInvalid, op, p, "a batch cannot append; write the whole content"))
	}
	if err := b.s.check(op, AccessWrite, p); err != nil {
		return b.fail(err)
	}
	h, size, enc, unpin, err := b.s.putContentOpts(ctx, content, false, opts.Encoding)
	if err != nil {
		return b.fail(contentErr(op, p, err))
	}
	b.unpins = append(b.unpins, unpin)
	b.events = append(b.events, Event{
		Op: OpWrite, Path: p, Blob: h, Size: size, Encoding: enc, Mode: opts.Perm, Owner: b.s.ownerOr(opts.Owner),
		Parents: opts.CreateParents, Exclusive: opts.Mode == WriteCreateNew,
		MustExist: opts.Mode == WriteOverwrite, IfVersion: opts.ExpectedVersion,
	})
	return nil
}

// Mkdir adds the creation of directory p.
func (b *Batch) Mkdir(p Path, opts MkdirOptions) error {
	if err := b.s.check("mkdir", AccessWrite, p); err != nil {
		return b.fail(err)
	}
	b.events = append(b.events, Event{Op: OpMkdir, Path: p, Mode: opts.Perm, ExactMode: opts.ExactPerm,
		Owner: b.s.ownerOr(opts.Owner), Parents: opts.Parents})
	return nil
}

// Symlink adds the creation of symlink p pointing at target, creating
// missing parent directories. The target is checked as Session.Symlink
// checks it.
func (b *Batch) Symlink(target string, p Path) error {
	const op = "symlink"
	if err := b.s.check(op, AccessWrite, p); err != nil {
		return b.fail(err)
	}
	switch {
	case target == "":
		return b.fail(newErr(CodeInvalid, op, p, "symlink target is empty"))
	case len(target) > MaxPathBytes:
		return b.fail(newErr(CodeInvalid, op, p, "symlink target is longer than 4095 bytes"))
	case strings.IndexByte(target, 0) >= 0:
		return b.fail(newErr(CodeInvalid, op, p, "symlink target contains a NUL byte"))
	case !utf8.ValidString(target):
		return b.fail(newErr(CodeInvalid, op, p, "symlink target is not valid UTF-8"))
	}
	b.events = append(b.events, Event{Op: OpSymlink, Path: p, Target: target, Owner: b.s.ownerOr(nil), Parents: true})
	return nil
}

// Remove adds the removal of p.
func (b *Batch) Remove(p Path, opts RemoveOptions) error {
	if err := b.s.check("remove", AccessWrite, p); err != nil {
		return b.fail(err)
	}
	b.events = append(b.events, Event{Op: OpRemove, Path: p, Recursive: opts.Recursive, WantKind: opts.Kind})
	return nil
}

// Rename adds a move of from to to.
func (b *Batch) Rename(from, to Path, opts RenameOptions) error {
	for _, p := range []Path{from, to} {
		if err := b.s.check("rename", AccessWrite, p); err != nil {
			return b.fail(err)
		}
	}
	b.events = append(b.events, Event{Op: OpRename, Path: from, To: to,
		NoReplace: opts.NoReplace, Exchange: opts.Exchange, Parents: opts.CreateParents})
	return nil
}

// fail remembers the first error, so Commit refuses a batch that lost a
// change.
func (b *Batch) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// Commit applies the batch's changes in order, as one event: either every
// change applies or the session is left exactly as it was, and the error
// names the change that failed. Committing an empty batch does nothing. A
// batch is finished after Commit, whatever its result.
func (b *Batch) Commit(ctx context.Context) (Tree, error) {
	const op = "batch"
	defer b.Discard()
	if b.err != nil {
		return Tree{}, fmt.Errorf("batch has a failed change: %w", b.err)
	}
	if len(b.events) == 0 {
		return b.s.Tree(), nil
	}
	_, t, err := b.s.mutate(ctx, op, func(Tree) (*Event, error) {
		now := b.s.now()
		for i := range b.events {
			b.events[i].Time = now
		}
		return &Event{Op: OpBatch, Path: b.events[0].Path, Time: now, Batch: b.events}, nil
	})
	return t, err
}

// Discard releases the batch's stored content without applying anything.
// It is safe to call more than once, and after Commit.
func (b *Batch) Discard() {
	b.done.Do(func() {
		for _, unpin := range b.unpins {
			unpin()
		}
	})
}

// batchable reports whether op may appear inside a batch event.
func batchable(op Op) bool {
	switch op {
	case OpWrite, OpMkdir, OpSymlink, OpRemove, OpRename, OpChmod, OpSetTimes:
		return true
	case OpCommit: // with the settimes that follows it (Session.Utimens)
		return true
	}
	return false
}

// reduceBatch folds a batch's events in order; the first failure fails the
// whole batch.
func reduceBatch(t Tree, e *Event) (Tree, error) {
	if len(e.Batch) == 0 {
		return t, newErr(CodeInvalid, "", e.Path, "empty batch")
	}
	for i := range e.Batch {
		sub := &e.Batch[i]
		if !batchable(sub.Op) {
			return t, newErr(CodeInvalid, "", sub.Path, fmt.Sprintf("%s cannot be part of a batch", sub.Op))
		}
		next, err := Reduce(t, sub)
		if err != nil {
			return t, batchErr(err, i, len(e.Batch), sub.Op)
		}
		t = next
	}
	return t, nil
}

// batchErr says which change of a batch failed, keeping the failure's code.
func batchErr(err error, i, n int, op Op) error {
	e, ok := err.(*Error)
	if !ok {
		return fmt.Errorf("change %d of %d (%s): %w", i+1, n, op, err)
	}
	c := *e
	msg := c.Msg
	if msg == "" {
		msg = string(c.Code)
	}
	c.Msg = fmt.Sprintf("change %d of %d (%s): %s", i+1, n, op, msg)
	return &c
}
