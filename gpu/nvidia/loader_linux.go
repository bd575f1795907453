package nvidia

import (
	"sync"

	"github.com/ebitengine/purego"
)

// linkMap is the start of glibc's struct link_map (<link.h>): the load address and the file name.
type linkMap struct {
	addr uintptr
	name *byte
}

// rtldDILinkmap is dlinfo's RTLD_DI_LINKMAP request (<dlfcn.h>).
const rtldDILinkmap = 2

// dlinfoFunc is libc's dlinfo(3) with RTLD_DI_LINKMAP's argument type, or nil where libc lacks it.
var dlinfoFunc = sync.OnceValue(func() func(handle uintptr, request int32, info **linkMap) int32 {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil
	}
	addr, err := purego.Dlsym(libc, "dlinfo")
	if err != nil || addr == 0 {
		return nil
	}
	var f func(handle uintptr, request int32, info **linkMap) int32
	purego.RegisterFunc(&f, addr)
	return f
})

// libraryFile is the file that the dynamic loader opened for handle h (dlinfo's link map), with its
// symbolic links resolved; where that cannot be had, the first mapped file named like soname
// (mappedPath).
func libraryFile(h uintptr, soname string) string {
	if dlinfo := dlinfoFunc(); dlinfo != nil {
		var lm *linkMap
		if dlinfo(h, rtldDILinkmap, &lm) == 0 && lm != nil && lm.name != nil {
			if name := cString(lm.name); name != "" {
				return resolvedFile(name)
			}
		}
	}
	return mappedPath(soname)
}
