// Package vfsdcontract is a contract (see package contract); not written yet.
package vfsdcontract
