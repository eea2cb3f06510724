// Package x07 is a contract (see package contract); not written yet.
package x07
