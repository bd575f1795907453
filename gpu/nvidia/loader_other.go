//go:build !linux

package nvidia

// libraryFile is the first mapped file named like soname (mappedPath); h is not asked off Linux.
func libraryFile(h uintptr, soname string) string { return mappedPath(soname) }
