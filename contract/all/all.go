// Package all registers every contract: import it for its side effect.
package all

import (
	_ "github.com/vfsd/vfsd/contract/aos"            // AOS host.fs.* and process.fs.*
	_ "github.com/vfsd/vfsd/contract/posfilesystem"  // prAxIs pos_filesystem
	_ "github.com/vfsd/vfsd/contract/vfsdcontract"   // vfsd's own (the default)
	_ "github.com/vfsd/vfsd/contract/weakincentives" // weakincentives VFS tools and HostMount
	_ "github.com/vfsd/vfsd/contract/x07"            // X07 ext-fs v1
)
