//go:build !linux

package nvidia

import "syscall"

// clangProcAttr adds nothing off Linux: there clang ends with its context (the compile's time limit).
func clangProcAttr() *syscall.SysProcAttr { return nil }
