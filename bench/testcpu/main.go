//go:build linux

// Command testcpu runs a command and prints the CPU time (user and system seconds) of every process
// it started, orphans included, and the wall time: docs/benchmarks.md, "Test suite time", measures
// each package's test binary with it. The processes a test starts (chromium and its renderers, the
// compile workers) may outlive their parents; testcpu makes itself their child subreaper, so they
// are reparented to it when their parent ends, and waits for every one, so their times are counted.
//
//	testcpu ./e2e.test -test.count=1
//
// prints "testcpu: 270.08 user 49.35 sys 568.71 wall s" on stderr, and exits with the command's
// status.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testcpu command [args...]")
		os.Exit(2)
	}
	usage, code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcpu:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "testcpu: %.2f user %.2f sys %.2f wall s\n", usage.User.Seconds(), usage.Sys.Seconds(), usage.Wall.Seconds())
	os.Exit(code)
}

// Usage is the CPU time of a command and every process it started, and its wall time.
type Usage struct{ User, Sys, Wall time.Duration }

// run runs args with stdin, stdout and stderr passed through, waits for it and every descendant
// (reparented to this process, the child subreaper), and returns their CPU time (this process's
// RUSAGE_CHILDREN, so call run once per process) and the command's exit status. err is set only
// when the command could not start.
func run(args []string) (Usage, int, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return Usage{}, 0, fmt.Errorf("becoming a child subreaper: %w", err)
	}
	start := time.Now()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return Usage{}, 0, err
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return Usage{}, 0, err
		}
		code = exit.ExitCode()
	}
	for { // the orphans, until none is left
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			break
		} else if err != nil && !errors.Is(err, syscall.EINTR) {
			return Usage{}, 0, err
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return Usage{}, 0, err
	}
	return Usage{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano()), Wall: time.Since(start)}, code, nil
}
