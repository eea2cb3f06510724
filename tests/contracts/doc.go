// Package contracts holds one conformance suite per seed contract: each
// case is a clause of the contract's document (../shared/seeds/), run
// through every transport a session offers. It has only tests; this file
// gives the package its documentation.
package contracts
