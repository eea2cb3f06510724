package csi

import (
	"fmt"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// supportedModes are the access modes a vfsd volume serves: on one node
// (its session lives in that node's daemon), by any number of pods there.
var supportedModes = []csipb.VolumeCapability_AccessMode_Mode{
	csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
}

// mountFlags are the mount options a volume takes (a PV's mountOptions):
// ro, and nosuid and nodev, which every vfsd mount has anyway.
var mountFlags = []string{"ro", "rw", "nosuid", "nodev"}

// checkCapability says why c is not served, or returns nil.
func checkCapability(c *csipb.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("a volume capability is missing")
	}
	if c.GetBlock() != nil {
		return fmt.Errorf("block access is not served: a vfsd volume is a file system (access type mount)")
	}
	m := c.GetMount()
	if m == nil {
		return fmt.Errorf("the volume capability names no access type; vfsd volumes take access type mount")
	}
	if fs := m.GetFsType(); fs != "" && fs != "vfsd" {
		return fmt.Errorf("fs_type %q: a vfsd volume is its own file system; leave fsType empty", fs)
	}
	for _, f := range m.GetMountFlags() {
		for _, o := range strings.Split(f, ",") {
			if !slices.Contains(mountFlags, strings.TrimSpace(o)) {
				return fmt.Errorf("mount flag %q is not served: accepted are %s", o, strings.Join(mountFlags, ", "))
			}
		}
	}
	if c.GetAccessMode() == nil {
		return fmt.Errorf("the volume capability names no access mode")
	}
	if mode := c.GetAccessMode().GetMode(); !slices.Contains(supportedModes, mode) {
		return fmt.Errorf("access mode %s is not served: a vfsd volume lives on one node (SINGLE_NODE_WRITER or SINGLE_NODE_READER_ONLY; ReadWriteOnce, and any number of pods on that node)", mode)
	}
	return nil
}

// checkCapabilities checks every capability of a request.
func checkCapabilities(cs []*csipb.VolumeCapability) error {
	if len(cs) == 0 {
		return fmt.Errorf("volume_capabilities is required")
	}
	for _, c := range cs {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyMount says whether a capability asks for a read-only mount.
func readOnlyMount(c *csipb.VolumeCapability) bool {
	if c.GetAccessMode().GetMode() == csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY {
		return true
	}
	for _, f := range c.GetMount().GetMountFlags() {
		for _, o := range strings.Split(f, ",") {
			if strings.TrimSpace(o) == "ro" {
				return true
			}
		}
	}
	return false
}
