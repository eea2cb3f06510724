package weakincentives

import (
	"context"

	"github.com/vfsd/vfsd/contract"
)

var (
	_ contract.StateReporter = Contract{}
	_ contract.RootDirectory = Contract{}
)

// RootDirectoryPrefix implements contract.RootDirectory: every
// weakincentives session has its root_path, "a per-session temporary
// directory on disk (under the operating system's default temporary
// directory)", which the daemon makes and fills.
func (Contract) RootDirectoryPrefix() string { return "vfsd-weakincentives-" }

// State is the contract.StateReporter: the session's VirtualFileSystem
// (see the package function State), which the daemon serves at GET
// /v1/sessions/{id}/contract/state.
func (Contract) State(ctx context.Context, env *contract.Env, rootPath string) (any, error) {
	st, err := State(ctx, env, rootPath)
	if err != nil {
		return nil, err
	}
	return st, nil
}
