package nvidia

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// The machine's own folders (CUDA's, the system's, pip's wheels) are searched before the unpacked
// CUDA 12.4, which comes last.
func TestSearchDirsPutTheUnpackedCUDALast(t *testing.T) {
	venv := t.TempDir()
	pip := filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib")
	touch(t, filepath.Join(pip, "libnvrtc.so.12"))
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("VIRTUAL_ENV", venv)
	dirs := SearchDirs()
	unpacked := slices.Index(dirs, filepath.Join(UnpackedCUDA12, "usr/lib/x86_64-linux-gnu"))
	if unpacked != len(dirs)-1 {
		t.Fatalf("SearchDirs %v: the unpacked CUDA 12.4 is not last", dirs)
	}
	for _, mine := range []string{"/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", pip} {
		if i := slices.Index(dirs, mine); i < 0 || i > unpacked {
			t.Errorf("SearchDirs %v: %s is missing or after the unpacked CUDA", dirs, mine)
		}
	}
}

// NVRTC is chosen newest soname first, each on the loader path, then the machine's folders, then the
// unpacked CUDA 12.4: the machine's own NVRTC 12 (or 13) wins over the unpacked 12.4, which wins over
// an NVRTC 11.8 anywhere; with none, the NotFoundError lists every place tried (and chooseCompiler,
// clang_test.go, falls back to clang).
func TestNVRTCChoiceOrder(t *testing.T) {
	root := t.TempDir()
	machine, pip, unpacked := filepath.Join(root, "usr/local/cuda/lib64"), filepath.Join(root, "site-packages/nvidia/cuda_nvrtc/lib"), filepath.Join(root, "opt/cuda-12.4/lib")
	for _, f := range []string{filepath.Join(machine, "libnvrtc.so.13"), filepath.Join(machine, "libnvrtc.so.11.2"),
		filepath.Join(pip, "libnvrtc.so.12"), filepath.Join(unpacked, "libnvrtc.so.12")} {
		touch(t, f)
	}
	dirs := func() []string { return []string{machine, pip, unpacked} }
	for _, tt := range []struct {
		name     string
		opens    []string // what opens: sonames (the loader path) or files
		want     string   // the file chosen, or "loader path"
		wantName string
	}{
		{"the machine's NVRTC 12 on the loader path", []string{"libnvrtc.so.12", filepath.Join(unpacked, "libnvrtc.so.12"), filepath.Join(machine, "libnvrtc.so.11.2")}, "loader path", "libnvrtc.so.12"},
		{"the machine's NVRTC 13", []string{filepath.Join(machine, "libnvrtc.so.13"), filepath.Join(unpacked, "libnvrtc.so.12")}, filepath.Join(machine, "libnvrtc.so.13"), "libnvrtc.so.13"},
		{"pip's NVRTC 12 before the unpacked one", []string{filepath.Join(pip, "libnvrtc.so.12"), filepath.Join(unpacked, "libnvrtc.so.12")}, filepath.Join(pip, "libnvrtc.so.12"), "libnvrtc.so.12"},
		{"the unpacked 12.4 before 11.8", []string{filepath.Join(unpacked, "libnvrtc.so.12"), filepath.Join(machine, "libnvrtc.so.11.2")}, filepath.Join(unpacked, "libnvrtc.so.12"), "libnvrtc.so.12"},
		{"11.8 last", []string{filepath.Join(machine, "libnvrtc.so.11.2")}, filepath.Join(machine, "libnvrtc.so.11.2"), "libnvrtc.so.11.2"},
	} {
		ok := map[string]bool{}
		for _, o := range tt.opens {
			ok[o] = true
		}
		l := Loader{Dirs: dirs, Open: fakeOpen(ok), Resolve: func(s string) string { return s }}
		got, err := l.Load(NVRTCNames)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		where := got.Path
		if got.Via == "loader path" {
			where = got.Via
		}
		if where != tt.want || got.Name != tt.wantName {
			t.Errorf("%s: got %s from %s, want %s from %s", tt.name, got.Name, where, tt.wantName, tt.want)
		}
	}
	_, err := Loader{Dirs: dirs, Open: fakeOpen(nil)}.Load(NVRTCNames)
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Tried) < 7 {
		t.Errorf("none opens: got %v, want a NotFoundError listing each soname and file tried", err)
	}
}
