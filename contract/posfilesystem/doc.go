// Package posfilesystem is a contract (see package contract); not written yet.
package posfilesystem
