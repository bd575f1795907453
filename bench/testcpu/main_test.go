//go:build linux

package main

import (
	"os/exec"
	"testing"
)

// A process the command leaves behind (its parent shell exits at once, the orphan then burns
// CPU for a while) is waited for and its CPU time counted: a plain wait for the command would
// count neither. The exit status is the command's.
func TestCountsOrphans(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	const loop = `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`
	usage, code, err := run([]string{"sh", "-c", "(" + loop + ") >/dev/null 2>&1 & exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit status %d, want the command's 3", code)
	}
	// The loop alone, timed the same way, as the reference: no wall-clock bound is asserted.
	ref, _, err := run([]string{"sh", "-c", loop})
	if err != nil {
		t.Fatal(err)
	}
	// run's counts are cumulative over this process's children: the second includes the first.
	orphan, alone := usage.User+usage.Sys, ref.User+ref.Sys-(usage.User+usage.Sys)
	if got, want := orphan, alone/2; got < want {
		t.Errorf("the orphan's CPU time: %v counted, want at least half of the same loop's %v run in the foreground", got, alone)
	}
}
