package nvidia

import (
	"fmt"
	"strings"
)

// Report is what this machine offers for GPU work: its devices, the driver's CUDA version and the
// libraries found, or the reason there is no GPU.
type Report struct {
	// Unavailable, when set, is why no GPU work can run, e.g. "no CUDA device: libcuda.so.1 not
	// found (tried …)" or "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (100)".
	Unavailable string   `json:"unavailable,omitempty"`
	Driver      string   `json:"driver,omitempty"`
	Devices     []Device `json:"devices,omitempty"`
	// Libraries are the files loaded (libcuda, NVRTC, cuBLAS), each with where it was found.
	Libraries []Loaded `json:"libraries,omitempty"`
	// NVRTC is the runtime compiler's CUDA version ("" when it is missing); it compiles kernels to
	// PTX even without a GPU.
	NVRTC string `json:"nvrtc,omitempty"`
	// Compiler is the compiler that learners' kernels are compiled with here: "NVRTC 11.8" when
	// NVRTC loads, else "clang 14.0.6" when a clang is on PATH, else "none" (and a note says what to
	// install). The playground's own kernels need none: they run from the embedded PTX.
	Compiler string `json:"compiler,omitempty"`
	// Notes are problems that do not stop all GPU work, e.g. a missing cuBLAS.
	Notes []string `json:"notes,omitempty"`
}

// Probe loads the driver, NVRTC and cuBLAS, looks for clang where NVRTC is missing, and lists the
// devices. It never fails: problems become Unavailable or Notes. The cmd/playground binary runs it
// in a child process (package gpu).
func Probe() Report {
	var r Report
	if n, err := LoadNVRTC(); err != nil {
		r.Notes = append(r.Notes, "NVRTC: "+err.Error())
	} else {
		r.Libraries = append(r.Libraries, n.Lib)
		r.NVRTC, _ = n.Version()
	}
	nv, cl, err := ChosenCompiler()
	r.Compiler = CompilerName(nv, cl)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	d, err := LoadDriver()
	if err != nil {
		r.Unavailable = "no CUDA device: " + err.Error()
		return r
	}
	r.Libraries = append([]Loaded{d.Lib}, r.Libraries...)
	if r.Driver, err = d.Version(); err != nil {
		r.Unavailable = "no CUDA device: " + err.Error()
		return r
	}
	if r.Devices, err = d.Devices(); err != nil {
		r.Unavailable = "no CUDA device: " + err.Error()
		return r
	}
	if len(r.Devices) == 0 {
		r.Unavailable = "no CUDA device: the driver reports no devices"
		return r
	}
	if lib, err := (Loader{}).Load(CuBLASNames); err != nil {
		r.Notes = append(r.Notes, "cuBLAS: "+err.Error())
	} else {
		r.Libraries = append(r.Libraries, lib)
	}
	return r
}

// Friendly turns an Unavailable reason into a few words for learners: "no NVIDIA GPU on this server"
// when no device or driver was found, else "the NVIDIA GPU is not usable here" (a driver or probe
// failure on a machine that may have one). The reason itself belongs behind a link.
func Friendly(reason string) string {
	for _, none := range []string{"not found", "CUDA_ERROR_NO_DEVICE", "reports no devices"} {
		if strings.Contains(reason, none) {
			return "no NVIDIA GPU on this server"
		}
	}
	return "the NVIDIA GPU is not usable here"
}

// Summary is one line for the page header: the devices, or why there are none.
func (r Report) Summary() string {
	if r.Unavailable != "" {
		return r.Unavailable
	}
	var parts []string
	for _, d := range r.Devices {
		parts = append(parts, fmt.Sprintf("%s (sm_%d, %d SMs, %.0f GiB, %d MHz)",
			d.Name, d.ComputeCapability, d.SMs, float64(d.MemoryBytes)/(1<<30), d.ClockKHz/1000))
	}
	return strings.Join(parts, "; ") + ", driver CUDA " + r.Driver
}
