//go:build !linux

package main

import (
	"fmt"
	"os"
)

// main says testcpu needs Linux: the child subreaper it relies on is Linux's (prctl).
func main() {
	fmt.Fprintln(os.Stderr, "testcpu: needs Linux (a child subreaper, prctl PR_SET_CHILD_SUBREAPER)")
	os.Exit(2)
}
