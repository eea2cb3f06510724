package tools

import (
	"github.com/vfsd/vfsd/tools/search"
	"github.com/vfsd/vfsd/vfs"
)

// This file exports the few pieces of the tools that contracts (package
// contract and its adapters) build on when they run an operation
// themselves instead of through Call: path resolution under the policy,
// the policy's walk filter, the grep engine and the inline limit.

// ResolvePath turns a tool's path parameter into a session path exactly as
// the tools do: the policy's checks on the raw text, canonicalisation,
// symlink resolution under the policy (the last segment followed when
// followLast is set), then the policy's path rules for a read or, with
// write, a write. Failures are *Failure (forbidden, invalid_path, ...).
func (t *Toolset) ResolvePath(param, raw string, write, followLast bool) (vfs.Path, error) {
	a := vfs.AccessRead
	if write {
		a = vfs.AccessWrite
	}
	p, err := t.path(param, raw, a, resolution(followLast))
	if err != nil {
		return "", failureOf(err)
	}
	return p, nil
}

// HiddenFilter is the policy's filter for walks (search.GrepOptions.Hidden,
// search.GlobOptions.Hidden): true for what a read would refuse.
func (t *Toolset) HiddenFilter() func(vfs.Path, vfs.Node) bool { return t.hiddenFilter() }

// GrepEngine is the grep engine the tools were configured with.
func (t *Toolset) GrepEngine() search.Engine {
	if e, ok := grepEngines[t.opts.GrepEngine]; ok {
		return e
	}
	return search.EngineAuto
}

// InlineBytes is the payload size above which output_mode auto returns a
// blob.
func (t *Toolset) InlineBytes() int64 { return t.opts.InlineBytes }

// FailureOf classifies any error as the tools do: a *Failure as is, an
// engine error by its code, anything else as an internal error.
func FailureOf(err error) *Failure { return failureOf(err) }
