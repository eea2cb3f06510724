package hostmount

import "syscall"

// statTimes are a stat's access and change times, in Unix ns.
func statTimes(st *syscall.Stat_t) (atime, ctime int64) {
	return st.Atimespec.Nano(), st.Ctimespec.Nano()
}
