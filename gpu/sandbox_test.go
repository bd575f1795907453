package gpu

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// confineCommand makes this test binary confine itself as a compile worker does and report what it
// can still do (confineProbe).
const confineCommand = "confine-probe"

// probeReport is what a confined process saw.
type probeReport struct {
	Err, Note, Cwd        string
	Euid, Entries         int
	Env                   []string
	Secret, SecretErr     string
	WriteHere, WriteOut   string // "" when the write worked, else its error
	LibraryErr            string // reading a system library
	RemainsAfterCleanupOf string
}

// confineProbe confines this process (no compiler chosen) and tries to read the file named by its
// argument, to write in its folder and outside it, and to read a system library.
func confineProbe(secret string) {
	var r probeReport
	dir, note, err := confine(nil, nil, "", "")
	r.Note = note
	if err != nil {
		r.Err = err.Error()
	}
	r.Cwd, _ = os.Getwd()
	r.Euid, r.Env = os.Geteuid(), os.Environ()
	entries, _ := os.ReadDir(".")
	r.Entries = len(entries)
	b, err := os.ReadFile(secret)
	r.Secret = string(b)
	if err != nil {
		r.SecretErr = err.Error()
	}
	errString := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	r.WriteHere = errString(os.WriteFile("here.txt", []byte("x"), 0o600))
	r.WriteOut = errString(os.WriteFile(filepath.Join(filepath.Dir(secret), "out.txt"), []byte("x"), 0o600))
	libs, _ := filepath.Glob("/usr/lib/*/libc.so.6")
	if len(libs) > 0 {
		_, err := os.ReadFile(libs[0])
		r.LibraryErr = errString(err)
	}
	r.RemainsAfterCleanupOf = dir
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// A confined compile worker runs in an empty folder of its own under the temporary folder, with no
// environment but PATH and TMPDIR, as nobody when started as root, and (with Landlock) can read
// neither a planted secret that its user could read nor write outside its folder, while the
// system's libraries stay readable.
func TestConfineShutsTheCompilerIn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the compiler is confined on Linux only")
	}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-9d1c"), 0o644); err != nil {
		t.Fatal(err)
	}
	for d := secretDir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // so that only Landlock, not the user, keeps the secret from nobody
	}
	tmp := t.TempDir()
	_ = os.Chmod(tmp, 0o755)
	cmd := exec.Command(mustExe(t), confineCommand, secret)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "PLAYGROUND_SECRET_TOKEN=s3cr3t"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the probe: %v", err)
	}
	var r probeReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the probe's report %q: %v", out, err)
	}
	if r.Err != "" {
		t.Fatalf("confine: %s", r.Err)
	}
	if got, want := filepath.Dir(r.Cwd), tmp; got != want || r.Entries != 0 {
		t.Errorf("the worker ran in %s with %d entries, want an empty folder in %s", r.Cwd, r.Entries, want)
	}
	slices.Sort(r.Env)
	if got, want := strings.Join(r.Env, " "), "PATH="+os.Getenv("PATH")+" TMPDIR=."; got != want {
		t.Errorf("environment %q, want %q", got, want)
	}
	if os.Geteuid() == 0 && r.Euid != nobody {
		t.Errorf("the worker started as root runs as uid %d, want %d (nobody)", r.Euid, nobody)
	}
	if r.WriteHere != "" || r.LibraryErr != "" {
		t.Errorf("writing in its folder: %q; reading libc: %q; want both to work", r.WriteHere, r.LibraryErr)
	}
	if r.Note != "" {
		t.Logf("no Landlock here (%s): the file system checks are skipped", r.Note)
		return
	}
	if r.Secret != "" || !strings.Contains(r.SecretErr, "permission denied") {
		t.Errorf("reading the planted secret gave %q, %q; want permission denied", r.Secret, r.SecretErr)
	}
	if !strings.Contains(r.WriteOut, "permission denied") {
		t.Errorf("writing outside its folder: %q, want permission denied", r.WriteOut)
	}
}
