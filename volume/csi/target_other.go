//go:build !linux

package csi

import "errors"

var errLinuxOnly = errors.New("vfsd csi publishes volumes on Linux only")

func (drv *Driver) makeTarget(string) (bool, error) { return false, errLinuxOnly }

func (drv *Driver) removeTarget(string) error { return errLinuxOnly }

func servedAt(string) error { return errLinuxOnly }
