// Package weakincentives is a contract (see package contract); not written yet.
package weakincentives
