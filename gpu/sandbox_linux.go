package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// nobody is the user and group (Debian's nobody and nogroup) that a compile runs as when the server
// runs as root.
const nobody = 65534

// confine shuts a one-compile worker in, after it has chosen its compiler (nv or cl) and the folder
// of CUDA's headers (headers, "" for none; nvidia.FindHeaders) and the tools it runs after the
// compile (the paths of ptxas and nvdisasm, "" for none; started from this thread as clang is) and before the
// compiler reads the learner's source: a fresh empty working folder (dir, under the temporary
// folder), no environment but PATH and TMPDIR (".", the working folder, which stays reachable when
// its full path is not), and, for the calling OS thread (which it locks for good: the compile runs
// on it, NVRTC in it and clang started from it, and both inherit its restrictions), on kernels with
// Landlock (Linux 5.13 and newer) a file system it can read only in the library folders the
// compiler needs, the headers folder and the tools' program files and write only in dir, no TCP, and the user and group nobody when running as root.
// Only the one thread: with cgo off, purego's runtime leaves Go unable to change every thread
// (syscall.AllThreadsSyscall is unsupported), and the learner's source reaches no other. note says
// what this machine leaves out (a kernel without Landlock; a user namespace without nobody, where
// Landlock then holds alone); err is a step that failed, and the compile must then not run. The
// caller removes dir where it can.
func confine(nv *nvidia.NVRTC, cl *nvidia.Clang, headers string, tools ...string) (dir, note string, err error) {
	runtime.LockOSThread()                    // never unlocked: the thread ends with the worker
	readable := compilerDirs(nv, cl, headers) // before the environment (LD_LIBRARY_PATH) goes
	files := []string{"/etc/ld.so.cache"}
	for _, t := range tools {
		if t != "" {
			files = append(files, resolved(t)) // the program alone, not its folder: it may sit beside anything
		}
	}
	if nv != nil {
		nv.PreloadBuiltins() // opened now, while its folder is surely readable
	}
	if dir, err = os.MkdirTemp("", "playground-compile-"); err != nil {
		return "", "", err
	}
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			return dir, "", err
		}
	}
	if err := os.Chdir(dir); err != nil {
		return dir, "", err
	}
	path := os.Getenv("PATH")
	os.Clearenv()
	_ = os.Setenv("PATH", path)
	_ = os.Setenv("TMPDIR", ".")
	note = sandboxNote()
	if note == "" {
		rules := []pathRule{
			{readDirs, readable}, {readFiles, files}, {readFiles | fsWriteFile, []string{os.DevNull}},
			{fsAll, []string{dir}}, {unix.LANDLOCK_ACCESS_FS_REMOVE_DIR, []string{filepath.Dir(dir)}}, // dir itself, at the end
		}
		if err := landlockThread(rules); err != nil {
			return dir, note, fmt.Errorf("landlock: %w", err)
		}
	}
	if root {
		if err := dropRoot(); err != nil {
			if !errors.Is(err, syscall.EINVAL) || note != "" {
				return dir, note, err
			}
			// A user namespace without nobody in it: Landlock still holds the file system.
			note = fmt.Sprintf("cannot become nobody here (%v): the compiler keeps its user, confined by Landlock", err)
		}
	}
	return dir, note, nil
}

// Landlock's file system rights (ABI 1 to 3, and 5's device ioctls), and the sets confine grants.
const (
	fsWriteFile = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	readFiles   = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE
	readDirs    = readFiles | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsABI1      = 1<<13 - 1 // execute … make_sym
	fsAll       = fsABI1 | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// pathRule grants access beneath each of paths (missing ones are skipped).
type pathRule struct {
	access uint64
	paths  []string
}

// landlockThread restricts the calling OS thread, and what it starts, to rules: every file system
// right this kernel's Landlock knows is denied outside them, and so are TCP bind and connect (ABI 4)
// and signals and abstract sockets outside the domain (ABI 6).
func landlockThread(rules []pathRule) error {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return e
	}
	handled := uint64(fsABI1)
	for v, r := range map[uintptr]uint64{2: unix.LANDLOCK_ACCESS_FS_REFER, 3: unix.LANDLOCK_ACCESS_FS_TRUNCATE, 5: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV} {
		if abi >= v {
			handled |= r
		}
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 24, 0) // up to Scoped
	if e != 0 {
		return fmt.Errorf("create ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	for _, r := range rules {
		for _, p := range r.paths {
			if err := addPath(int(fd), p, r.access&handled); err != nil {
				return err
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("restrict self: %w", e)
	}
	return nil
}

// addPath grants access beneath path (only the rights a file can have, when path is not a folder).
func addPath(ruleset int, path string, access uint64) error {
	f, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(f)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("%s: %w", path, e)
	}
	return nil
}

// sandboxNote says what this machine's kernel leaves out of confine: "" with Landlock, else that
// the compiler's file system is restricted only by its user (and the source rule).
func sandboxNote() string {
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e == 0 {
		return ""
	}
	return fmt.Sprintf("this kernel has no Landlock (%v): compiles run in an empty folder, without the environment and, under root, as nobody, but may read any file nobody can (the source rule still refuses every #include but the playground's headers)", e)
}

// dropRoot makes the calling OS thread nobody, with no supplementary groups, for good (raw
// system calls: Go's own wrappers would change every thread, which cgo-less purego cannot).
func dropRoot() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	if os.Geteuid() != nobody || os.Getegid() != nobody {
		return errors.New("still privileged after setresuid")
	}
	return nil
}

// compilerDirs are the folders a compiler reads and runs from: the system's library folders, those
// of LD_LIBRARY_PATH, NVRTC's own folder, clang's program folder and the one above it (clang
// re-runs itself, and finds its libraries and resources there: /usr/lib/llvm-14/bin and
// /usr/lib/llvm-14) and the folder of CUDA's headers, headers (each when not ""). ptxas is given
// its program file alone (confine), not its folder.
func compilerDirs(nv *nvidia.NVRTC, cl *nvidia.Clang, headers string) []string {
	triplet := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		triplet = "aarch64-linux-gnu"
	}
	dirs := []string{"/lib", "/lib64", "/lib/" + triplet, "/usr/lib", "/usr/lib64", "/usr/lib/" + triplet,
		"/usr/local/lib", "/usr/local/cuda/lib64"}
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	if nv != nil {
		dirs = append(dirs, filepath.Dir(resolved(nv.Lib.Path)))
	}
	if cl != nil {
		bin := filepath.Dir(resolved(cl.Path))
		dirs = append(dirs, bin)
		if up := filepath.Dir(bin); filepath.Base(bin) == "bin" && up != "/" && up != "/usr" && up != "/usr/local" {
			dirs = append(dirs, up)
		}
	}
	if headers != "" {
		dirs = append(dirs, resolved(headers))
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// resolved is p with its symbolic links followed (p itself where that fails): Landlock's rules hold
// for the file a path names.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
