//go:build unix

package server

import "syscall"

// raiseFileLimit raises the process's soft limit of open files to its hard limit (the Go runtime
// does so too on most systems; this makes it explicit) and returns the soft limit in force, or 0
// where it cannot be read.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	return uint64(lim.Cur)
}
