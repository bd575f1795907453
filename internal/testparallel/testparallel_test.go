package testparallel

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const envChild = "TESTPARALLEL_CHILD"

func TestMain(m *testing.M) {
	Default(7)
	os.Exit(m.Run())
}

// The child run of TestReportParallel: it prints the -test.parallel its tests run with.
func TestReportParallel(t *testing.T) {
	if os.Getenv(envChild) == "" {
		t.Skip("run by TestDefaultUnlessGiven")
	}
	t.Logf("parallel=%s", flag.Lookup("test.parallel").Value)
}

// Without -test.parallel the tests run seven at a time (TestMain's Default(7)); with it, as given.
func TestDefaultUnlessGiven(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "parallel=7"},
		{[]string{"-test.parallel=3"}, "parallel=3"},
	} {
		args := append([]string{"-test.run=^TestReportParallel$", "-test.v"}, tc.args...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), envChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("with %q: %v\n%s\nwant %s", tc.args, err, out, tc.want)
		}
	}
}
