//go:build !unix

package cluster

// freezeOnce is nil where a process cannot stop itself (SIGSTOP): the frozen-worker test is Unix only.
func freezeOnce() func() { return nil }
