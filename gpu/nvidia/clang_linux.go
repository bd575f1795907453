package nvidia

import "syscall"

// clangProcAttr makes the kernel kill clang when the process that started it dies: the compile
// worker is killed at its time limit or on Stop, and clang must not outlive it.
func clangProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
