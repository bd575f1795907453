package calibrate

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gpuplayground/playground/estimate"
)

// cached is the cache file's content: the rates and what they were measured with.
type cached struct {
	Key   string          `json:"key"`
	Rates *estimate.Rates `json:"rates"`
}

// Key identifies what rates depend on: the CPU model, the cores and GOMAXPROCS, and this binary
// (the SHA-256 of its executable: the kernels are its code).
func Key() string {
	bin := "unknown"
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				bin = hex.EncodeToString(h.Sum(nil))[:16]
			}
			f.Close()
		}
	}
	return fmt.Sprintf("%s|cpus=%d|procs=%d|%s/%s|bin=%s", CPUModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, bin)
}

// CachePath is where Save keeps the rates: gpu-playground/rates.json under os.UserCacheDir.
func CachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "gpu-playground", "rates.json"), nil
}

// ErrStale is Load's error for a file measured on another CPU, core count or binary.
var ErrStale = errors.New("calibrate: the kept rates were measured with another CPU or binary")

// Load reads rates that Save kept at path, if they were measured with this Key.
func Load(path string) (*estimate.Rates, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c cached
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", path, err)
	}
	if c.Key != Key() || c.Rates == nil || len(c.Rates.Kernels) == 0 {
		return nil, ErrStale
	}
	return c.Rates, nil
}

// Save keeps r at path (its folder made if needed) with this Key, replacing the file atomically.
func Save(path string, r *estimate.Rates) error {
	data, err := json.MarshalIndent(cached{Key: Key(), Rates: r}, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Ensure installs this machine's rates in into, for every estimate made through it: those kept at path
// when they match this Key, else freshly measured ones (Measure with opt), which it then keeps at
// path ("" keeps nothing and reads nothing). It returns the rates installed and whether they were
// measured now. A failure to keep them is not an error (the rates are installed); a cancelled
// measurement installs nothing and returns ctx.Err(), so the defaults stay.
func Ensure(ctx context.Context, path string, into *estimate.Current, opt Options) (r *estimate.Rates, measured bool, err error) {
	if path != "" {
		if r, err := Load(path); err == nil {
			into.Set(r)
			return r, false, nil
		}
	}
	if r, err = Measure(ctx, opt); err != nil {
		return nil, false, err
	}
	into.Set(r)
	if path != "" {
		_ = Save(path, r)
	}
	return r, true, nil
}

// CPUModel is the processor's model name from /proc/cpuinfo ("" elsewhere), plus GOARCH.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
