// Package contracts holds one conformance suite per seed contract: each
// case is a clause of the contract's document (../shared/seeds/), run
// through every transport a session offers.
package contracts

import (
	"testing"

	"github.com/vfsd/vfsd/contract/contracttest"

	_ "github.com/vfsd/vfsd/contract/all"
)

// runAll runs a contract's cases through the Go API.
// TODO(contracts-core): also through the HTTP API and MCP against a
// running daemon.
func runAll(t *testing.T, contractName string, cases []contracttest.Case) {
	t.Run("go", func(t *testing.T) { contracttest.RunGo(t, contractName, cases) })
}
