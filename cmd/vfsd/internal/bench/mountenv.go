//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// settleTime returns how long each round waits before its first step, and
// what the filesystem holding dir is.
//
// ext4 without a journal does not reuse an inode for a minute after it
// was deleted (six while its inode table block is dirty): every create
// skips the recently deleted inodes of its block group, one inode table
// lookup each (find_inode_bit, recently_deleted), so creating files right
// after deleting a tree costs several times more, and creates depend on
// what anything deleted lately nearby. Waiting a minute, after a sync,
// keeps most of an earlier round's or run's deletions out of a round; the
// summary says so, since it cannot remove the effect.
func settleTime(dir string) (time.Duration, string) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return 0, "unknown"
	}
	if sfs.Type != unix.EXT4_SUPER_MAGIC {
		return 0, fmt.Sprintf("filesystem type %#x", sfs.Type)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, "ext4"
	}
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return 0, "ext4"
	}
	dev := filepath.Base(link)
	if journals, _ := filepath.Glob("/proc/fs/jbd2/" + dev + "-*"); len(journals) > 0 {
		return 0, "ext4 on " + dev + " with a journal"
	}
	return recentlyDeletedWindow, fmt.Sprintf("ext4 on %s without a journal: for a minute after a deletion (six while "+
		"the inode table block is dirty) it skips the deleted inode, at a cost, on every create in the block group, so "+
		"untar, small_creates and sed_i depend on what this run or anything else deleted lately; each round waits %s "+
		"after a sync first, which helps but does not remove that: for comparable create timings pass --dir on a "+
		"filesystem with a journal", dev, recentlyDeletedWindow)
}

// kernelRelease returns uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
