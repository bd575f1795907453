package gpu

import "syscall"

// limitMemory lowers this process's RLIMIT_DATA (heap, anonymous and other private writable
// mappings) to bytes, soft and hard, so an allocation past it fails (NVRTC then reports "out of
// memory"). RLIMIT_DATA rather than RLIMIT_AS: Go and the libraries reserve address space they never
// touch (a compiling worker maps ~1.6 GB of it while using ~100 MiB).
func limitMemory(bytes int64) error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &r); err != nil {
		return err
	}
	r.Cur = min(uint64(bytes), r.Max)
	r.Max = r.Cur
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &r)
}
