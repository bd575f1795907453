//go:build unix

package store

import "golang.org/x/sys/unix"

// DiskFree reports the bytes free to this user and the size of dir's file system (statfs).
func DiskFree(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
