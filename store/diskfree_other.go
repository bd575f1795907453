//go:build !unix

package store

import "errors"

// DiskFree is unknown on this system: an error, so that Room never refuses.
func DiskFree(string) (free, total uint64, err error) {
	return 0, 0, errors.New("free disk space is not known on this system")
}
