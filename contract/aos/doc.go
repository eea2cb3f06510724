// Package aos is a contract (see package contract); not written yet.
package aos
