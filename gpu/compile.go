package gpu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// Compile limits: a learner's source is compiled in a fresh worker process of its own, which sets
// RLIMIT_DATA (heap and private mappings) to CompileMemory before it loads NVRTC or starts clang
// (which inherits the limit, and is killed with the worker), and is killed when the compile passes
// CompileTimeout, when its context ends, or when it is done. A preprocessor or template bomb
// therefore costs at most CompileTimeout of one core and CompileMemory, never the GPU worker (whose
// CUDA driver maps huge ranges, so it gets no such limit) or the server.
const (
	// CompileTimeout bounds one compile: NVRTC compiles a cell's kernel in well under a second.
	CompileTimeout = 10 * time.Second
	// CompileMemory bounds a compiling process's data (RLIMIT_DATA); a small kernel needs ~100 MiB.
	CompileMemory = 1 << 30
	// CompileParallel is how many compiles may run at once; others wait (cancellably).
	CompileParallel = 2
)

// CompileTimeoutError is a compile stopped at its time limit.
type CompileTimeoutError struct{ Limit time.Duration }

func (e *CompileTimeoutError) Error() string {
	return fmt.Sprintf("compilation took too long (limit %s): the compiler was stopped; macros or templates that expand without end (a preprocessor bomb) do this", e.Limit)
}

// Compiler compiles CUDA C++ to PTX, each compile in a fresh, short-lived worker process started by
// Transport (the same gpu-worker subcommand as the GPU worker's), under a time and a memory limit,
// confined so that the compiler can read no file of the server's (compileHere; docs/gpu.md,
// "Compilers"), after the source rule (nvidia.CheckIncludes) has refused any #include but the
// playground's headers.
// The worker uses NVRTC when it loads, else clang (with the prelude gpu/nvidia/src/clang_prelude.h)
// when one is on PATH, else fails with nvidia.NoCompiler, which names the packages to install
// (nvidia.ChosenCompiler; the device report's Compiler field says which one this server uses).
type Compiler struct {
	Transport Transport
	// Timeout defaults to CompileTimeout, Memory (bytes) to CompileMemory, Parallel to
	// CompileParallel, DisassembleTimeout (what SASS work adds to Timeout) to DisassembleTimeout.
	Timeout            time.Duration
	Memory             int64
	Parallel           int
	DisassembleTimeout time.Duration

	timers clock // nil: the real clock; tests inject a fake one

	once  sync.Once
	slots chan struct{}
}

func (c *Compiler) limits() (time.Duration, int64) {
	timeout, memory := c.Timeout, c.Memory
	if timeout <= 0 {
		timeout = CompileTimeout
	}
	if memory <= 0 {
		memory = CompileMemory
	}
	return timeout, memory
}

// Compile compiles src (called name in the compiler's log) to PTX for compute_<arch> (arch as PTX
// writes it after "compute_": "80", "90a"; clang: for sm_80, or sm_70 below compute_80; an
// architecture-specific arch the compiler cannot target for its compute capability alone,
// nvidia.CompileFor). A source that does not compile returns an error holding the
// compiler's log, whose lines read "name(LINE): error: …" from either compiler; no compiler returns
// an error starting with nvidia.NoCompiler;
// one that takes longer than the time limit returns a *CompileTimeoutError; one that runs out of
// its memory says so. When ctx ends, the compile is stopped (or no longer waited for) at once and
// context.Cause(ctx) is returned.
func (c *Compiler) Compile(ctx context.Context, src, name, arch string) (string, error) {
	out, err := c.CompileSass(ctx, src, name, arch, nil)
	return out.PTX, err
}

// Compiled is a compile's result: the PTX and, where asked (CompileSass), what ptxas -v reports of
// it.
type Compiled struct {
	PTX string
	// Resources is each kernel's registers, shared memory and spills per architecture asked, in the
	// order asked; none where ResourcesError says why (no ptxas, its refusal, its time limit).
	Resources      []nvidia.EntryResources
	ResourcesError string
	// SASS is the machine code for the first architecture asked, where asked (Disassemble); nil
	// where SASSError says why (no ptxas or nvdisasm, their refusal, the time limit).
	SASS      *nvidia.SASS
	SASSError string
	// SASSLines is the SASS instructions per line of the PTX for the first architecture asked, where
	// asked (CompileSassLines); nil where SASSLinesError says why (no ptxas or nvdisasm, their
	// refusal, the time limit).
	SASSLines      *nvidia.PTXLineSASS
	SASSLinesError string
}

// CompileSass is Compile, then, in the same confined worker, ptxas -v on the PTX for each sm_<N> of
// sass (at most MaxSass; none: Compile's), each run bounded by PtxasTimeout and the compile's own
// time limit. ptxas's failure (absent, refusing the PTX or an architecture, too slow) is no error:
// the PTX comes back with ResourcesError saying why.
func (c *Compiler) CompileSass(ctx context.Context, src, name, arch string, sass []int) (Compiled, error) {
	return c.compile(ctx, Request{Op: "compile", Source: src, Name: name, Arch: arch, Sass: sass})
}

// CompileSassLines is CompileSass for sm_<sm> alone, and also the SASS instructions each line of the
// PTX became (nvidia.SASSPerPTXLine: ptxas -lineinfo on the PTX with a line table of its own lines,
// nvdisasm -g), for the time model to charge, in the same confined worker, bounded by
// DisassembleTimeout, which the compile's limit gains. None (no ptxas or nvdisasm here, their
// refusal, too slow) is no error: Compiled.SASSLinesError says why.
func (c *Compiler) CompileSassLines(ctx context.Context, src, name, arch string, sm int) (Compiled, error) {
	return c.compile(ctx, Request{Op: "compile", Source: src, Name: name, Arch: arch, Sass: []int{sm}, SassLines: true})
}

// Disassemble is CompileSass for sm_<sm> alone, and also the SASS ptxas makes for it, with each
// instruction's source line (ptxas -lineinfo, nvdisasm -g: nvidia.Ptxas.Disassemble), in the same
// confined worker, the two bounded by DisassembleTimeout, which the compile's limit gains. No SASS (no ptxas or nvdisasm
// here, their refusal, too slow) is no error: Compiled.SASSError says why.
func (c *Compiler) Disassemble(ctx context.Context, src, name, arch string, sm int) (Compiled, error) {
	return c.compile(ctx, Request{Op: "compile", Source: src, Name: name, Arch: arch, Sass: []int{sm}, Disassemble: true})
}

// compile runs the compile req (Source, Name, Arch, Sass, Disassemble) in a one-compile worker.
func (c *Compiler) compile(ctx context.Context, req Request) (Compiled, error) {
	c.once.Do(func() {
		n := c.Parallel
		if n <= 0 {
			n = CompileParallel
		}
		c.slots = make(chan struct{}, n)
		if note := sandboxNote(); note != "" {
			log.Printf("compiler: %s", note)
		}
	})
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return Compiled{}, context.Cause(ctx)
	}
	timeout, memory := c.limits()
	if req.Disassemble || req.SassLines {
		timeout += cmp.Or(c.DisassembleTimeout, DisassembleTimeout)
	}
	tr, cleanup := compileTransport(c.Transport)
	defer cleanup()
	s := &Supervisor{Transport: tr, LaunchTimeout: timeout, timers: c.timers,
		timeout: func(limit time.Duration) error { return &CompileTimeoutError{Limit: limit} }}
	defer s.Close()
	var out Compiled
	req.MemoryLimit = memory
	err := s.Do(ctx, req, func(r Response) {
		if r.PTX != "" {
			out.PTX = r.PTX
		}
		if r.Done {
			out.Resources, out.ResourcesError = r.Resources, bounded(r.ResourcesError, MaxResourcesError)
			out.SASS, out.SASSError = r.SASS, bounded(r.SASSError, MaxResourcesError)
			out.SASSLines, out.SASSLinesError = r.SASSLines, bounded(r.SASSLinesError, MaxResourcesError)
		}
	})
	if err == nil || ctx.Err() != nil {
		return out, err
	}
	if kept, ok := ptxasOutran(out, err, req.Sass); ok {
		if req.Disassemble {
			kept.SASSError = kept.ResourcesError
		}
		if req.SassLines {
			kept.SASSLinesError = kept.ResourcesError
		}
		return kept, nil
	}
	var we *WorkerError
	switch {
	case errors.As(err, &we):
		msg := strings.TrimSuffix(we.Msg, "; the next run starts a fresh worker")
		return Compiled{}, fmt.Errorf("the compiler's process %s (its memory is limited to %s)", msg, mib(memory))
	case strings.Contains(err.Error(), "out of memory"):
		return Compiled{}, fmt.Errorf("compilation ran out of memory (limit %s): %w", mib(memory), err)
	}
	return Compiled{}, err
}

// ptxasOutran is a compile asked for sass that ended in err, out being what its worker sent: where
// err is the time limit and the PTX had come (the worker sends it before it starts ptxas), the
// compile's result is that PTX without resources (ok true), the reason in ResourcesError.
func ptxasOutran(out Compiled, err error, sass []int) (Compiled, bool) {
	var te *CompileTimeoutError
	if len(sass) == 0 || out.PTX == "" || !errors.As(err, &te) {
		return Compiled{}, false
	}
	return Compiled{PTX: out.PTX, ResourcesError: bounded("ptxas: "+err.Error(), MaxResourcesError)}, true
}

// bounded is s cut to at most n bytes (at a rune's start), "…" marking a cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// compileTransport is t for one compile worker: an Exec starts it in a fresh temporary folder,
// which is its TMPDIR too (the worker makes its own working folder there; cleanup removes them both,
// whatever the worker left, even when it was killed), with only the environment a compile needs
// (compileEnv) instead of the server's; the worker then confines itself further (confine). Other
// transports are used as they are.
func compileTransport(t Transport) (tr Transport, cleanup func()) {
	e, ok := t.(Exec)
	if !ok || e.Env != nil {
		return t, func() {}
	}
	dir, err := os.MkdirTemp("", "playground-compiles-")
	if err != nil {
		dir = os.TempDir()
	}
	e.Env, e.Dir = append(compileEnv(), "TMPDIR="+dir), dir
	if err != nil {
		return e, func() {}
	}
	return e, func() { _ = os.RemoveAll(dir) }
}

// compileEnv is the environment a compile worker starts with, less its TMPDIR: where programs
// (clang), libraries (NVRTC), CUDA's headers (nvidia.IncludeEnv), ptxas (nvidia.PtxasEnv) and nvdisasm
// (nvidia.NvdisasmEnv) are found
// and the compiler choice (nvidia.CompilerEnv); nothing else of the server's (no tokens, no data folder).
func compileEnv() []string {
	env := []string{"LC_ALL=C"}
	for _, k := range []string{"PATH", "LD_LIBRARY_PATH", nvidia.CompilerEnv, nvidia.IncludeEnv, nvidia.PtxasEnv, nvidia.NvdisasmEnv} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func mib(b int64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// ptxas limits: a compile worker assembles its PTX for at most MaxSass architectures, each run of
// ptxas stopped after PtxasTimeout (a kernel takes well under a second); ResourcesError is cut to
// MaxResourcesError bytes.
const (
	MaxSass           = 4
	PtxasTimeout      = 5 * time.Second
	MaxResourcesError = 1 << 10
)

// DisassembleTimeout bounds Show SASS's ptxas -v -lineinfo and nvdisasm together (a kernel takes
// well under a second of each; nvdisasm is a 50 MB program to start), and is added to the compile's
// time limit when a compile asks for them (Compiler.Disassemble).
const DisassembleTimeout = 2 * PtxasTimeout

// compileHere is a compile worker's compile, in its own process: with NVRTC when it loads, else
// with clang, else an error that starts with nvidia.NoCompiler, with CUDA's headers from
// nvidia.FindHeaders. A source the source rule refuses (nvidia.Refuse) is refused first, before
// either compiler is looked for (NVRTC's load and clang's look cost a refused trick more than the
// refusal, about 0.05 CPU s). clang gets CompileTimeout of its own as a backstop; the supervisor's limit (which
// may be shorter) kills this process, and clang with it. With req.Sass (and MemoryLimit), ptxas
// (nvidia.LookPtxas: looked for before confine, run, even its --version, only after) then
// assembles the PTX (sass), after ready is given the PTX; with req.Disassemble, ptxas -v -lineinfo
// and nvdisasm (nvidia.LookNvdisasm, looked for and granted as ptxas is) instead give the report and
// the SASS for req.Sass[0] alone (disassemble).
//
// A one-compile worker (MemoryLimit set) confines itself first (confine: an empty folder, no
// environment, nobody under root, Landlock, the ptxas and nvdisasm program files readable), so neither the compiler nor
// ptxas, which this thread starts as it starts clang, can read a file of the server's even past the
// source rule; a worker that cannot confine itself does not compile.
func compileHere(req Request, ready func(ptx string)) (Compiled, error) {
	if err := nvidia.Refuse(req.Source, req.Name); err != nil {
		return Compiled{}, err // as CompileFor refuses it, without loading NVRTC or looking at clang
	}
	nv, cl, err := nvidia.ChosenCompiler()
	if err != nil {
		return Compiled{}, err
	}
	headers := nvidia.FindHeaders(nv) // before confine clears the environment (nvidia.IncludeEnv)
	ptxasPath, nvdisasmPath := "", ""
	if len(req.Sass) > 0 && req.MemoryLimit > 0 {
		ptxasPath = nvidia.LookPtxas() // found now, run (even its --version) only once confined
	}
	if (req.Disassemble || req.SassLines) && ptxasPath != "" {
		nvdisasmPath = nvidia.LookNvdisasm() // likewise
	}
	if req.MemoryLimit > 0 {
		dir, note, err := confine(nv, cl, headers, ptxasPath, nvdisasmPath)
		if dir != "" {
			defer os.Remove(dir) // emptied by the compiler (clang removes its folder); by its full path, where nobody may
		}
		if err != nil {
			return Compiled{}, fmt.Errorf("cannot confine the compiler: %w", err)
		}
		if note != "" {
			fmt.Fprintln(os.Stderr, "compile worker:", note)
		}
	}
	limit := CompileTimeout
	if req.Disassemble || req.SassLines {
		limit += DisassembleTimeout
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), limit, &CompileTimeoutError{Limit: limit})
	defer cancel()
	ptx, err := nvidia.CompileFor(ctx, nv, cl, headers, req.Source, req.Name, req.Arch)
	if err != nil || len(req.Sass) == 0 {
		return Compiled{PTX: ptx}, err
	}
	ready(ptx)
	out := Compiled{PTX: ptx}
	switch px, err := ptxasAt(ptxasPath, req.MemoryLimit); {
	case err != nil:
		out.ResourcesError = bounded(err.Error(), MaxResourcesError)
	case req.Disassemble && nvdisasmPath != "":
		out.SASS, out.Resources, out.SASSError = disassemble(ctx, px, ptx, req.Sass[0], nvdisasmPath)
		if out.Resources == nil {
			out.ResourcesError = out.SASSError
		}
	case req.SassLines && nvdisasmPath != "":
		out.SASSLines, out.Resources, out.SASSLinesError = sassLines(ctx, px, ptx, req.Sass[0], nvdisasmPath)
		if out.Resources == nil {
			out.ResourcesError = out.SASSLinesError
		}
	default:
		out.Resources, out.ResourcesError = sass(ctx, px, ptx, req.Sass)
		if req.Disassemble || req.SassLines {
			out.SASSError = fmt.Sprintf("nvdisasm not found (tried %s)", strings.Join(nvidia.NvdisasmPaths(), ", "))
		}
		if req.SassLines {
			out.SASSLinesError, out.SASSError = out.SASSError, ""
		}
	}
	if req.SassLines && out.SASSLines == nil && out.SASSLinesError == "" {
		out.SASSLinesError = out.ResourcesError
	}
	if out.ResourcesError != "" && req.Disassemble && out.SASS == nil && out.SASSError == "" {
		out.SASSError = out.ResourcesError
	}
	return out, nil
}

// disassemble is px's SASS of ptx for sm_<sm>, listed by the nvdisasm at path, and ptxas's report
// of the same run (DisassembleTimeout for both), or nil and why not.
func disassemble(ctx context.Context, px *nvidia.Ptxas, ptx string, sm int, path string) (*nvidia.SASS, []nvidia.EntryResources, string) {
	actx, cancel := context.WithTimeout(ctx, DisassembleTimeout)
	defer cancel()
	s, res, err := px.Disassemble(actx, ptx, sm, path)
	if err != nil {
		return nil, res, bounded(err.Error(), MaxResourcesError)
	}
	return &s, res, ""
}

// sassLines is px's SASS instructions per line of ptx for sm_<sm> (nvidia.SASSPerPTXLine), listed
// by the nvdisasm at path, and ptxas's report of the same run, within DisassembleTimeout, or nil
// and why not.
func sassLines(ctx context.Context, px *nvidia.Ptxas, ptx string, sm int, path string) (*nvidia.PTXLineSASS, []nvidia.EntryResources, string) {
	actx, cancel := context.WithTimeout(ctx, DisassembleTimeout)
	defer cancel()
	s, res, err := nvidia.SASSPerPTXLine(actx, px, path, ptx, sm)
	if err != nil {
		return nil, res, bounded(err.Error(), MaxResourcesError)
	}
	return &s, res, ""
}

// ptxasAt is the ptxas at path (nvidia.PtxasAt), for a confined worker (memoryLimit set) only.
func ptxasAt(path string, memoryLimit int64) (*nvidia.Ptxas, error) {
	switch {
	case memoryLimit <= 0:
		return nil, errors.New("ptxas runs in a confined one-compile worker only")
	case path == "":
		return nil, fmt.Errorf("ptxas not found (tried %s)", strings.Join(nvidia.PtxasPaths(), ", "))
	}
	return nvidia.PtxasAt(path)
}

// sass runs px -v on ptx for each of archs (the first MaxSass, each once; PtxasTimeout each) and
// returns the kernels' resources, or none and the first failure.
func sass(ctx context.Context, px *nvidia.Ptxas, ptx string, archs []int) ([]nvidia.EntryResources, string) {
	var out []nvidia.EntryResources
	seen := map[int]bool{}
	for _, a := range archs[:min(len(archs), MaxSass)] {
		if seen[a] {
			continue
		}
		seen[a] = true
		actx, cancel := context.WithTimeout(ctx, PtxasTimeout)
		res, err := px.Resources(actx, ptx, a)
		cancel()
		if err != nil {
			return nil, bounded(err.Error(), MaxResourcesError)
		}
		out = append(out, res...)
	}
	return out, ""
}
