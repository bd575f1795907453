//go:build !unix

package server

// raiseFileLimit is a no-op where there are no resource limits to raise; 0: unknown.
func raiseFileLimit() uint64 { return 0 }
