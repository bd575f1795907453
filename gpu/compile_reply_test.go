package gpu

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpuplayground/playground/gpu/nvidia"
)

// readBack reads one reply line as the supervisor does (readLines, at most maxLine).
func readBack(t *testing.T, line []byte) Response {
	t.Helper()
	out := make(chan lineOrErr, 2)
	readLines(bytes.NewReader(line), out, make(chan struct{}))
	l, ok := <-out
	if !ok || l.err != nil {
		t.Fatalf("the supervisor could not read a %d-byte line: %v", len(line), l.err)
	}
	return l.resp
}

// A compile's Done line fits the supervisor's line however large the PTX and its SASS: a PTX that
// fits up to the last byte comes back whole, one a byte longer fails the compile with a reason (not
// a worker taken for broken), and per-line SASS counts too large beside the PTX are left out with
// a reason while the PTX, already sent on its own line, is not repeated.
func TestCompileReplyNearTheCap(t *testing.T) {
	base, _ := replyLine(Response{ID: 1, PTX: "x", Done: true})
	fits := strings.Repeat("a", maxLine-len(base)+1) // the line is maxLine bytes, newline included
	line, ok := replyLine(compileDone(1, Compiled{PTX: fits}, nil, false))
	if got := readBack(t, line); !ok || len(line) != maxLine || got.PTX != fits || got.Error != "" {
		t.Errorf("a PTX filling the line: %d bytes, fits %v, error %q, PTX kept %v", len(line), ok, got.Error, got.PTX == fits)
	}
	line, ok = replyLine(compileDone(1, Compiled{PTX: fits + "a"}, nil, false))
	if got := readBack(t, line); !ok || got.PTX != "" || !strings.Contains(got.Error, "MiB of PTX, more than the 1 MiB") {
		t.Errorf("a PTX a byte too long: fits %v, error %q, PTX %d bytes; want the compile failed with a reason", ok, got.Error, len(got.PTX))
	}
	// Sent on its own line first, the PTX is not on the Done line: its SASS counts fit beside it.
	counts := make([]int, 100000)
	lines := &nvidia.PTXLineSASS{Arch: "sm_90", Counts: counts, Copies: counts}
	line, ok = replyLine(compileDone(1, Compiled{PTX: fits, SASSLines: lines}, nil, true))
	if got := readBack(t, line); !ok || got.PTX != "" || got.SASSLines == nil || len(got.SASSLines.Counts) != len(counts) {
		t.Errorf("counts beside a sent PTX: fits %v, PTX %d bytes, counts %v", ok, len(got.PTX), got.SASSLines != nil)
	}
	big := make([]int, maxLine/4)
	for i := range big {
		big[i] = 1000
	}
	huge := &nvidia.PTXLineSASS{Arch: "sm_90", Counts: big, Copies: big}
	line, ok = replyLine(compileDone(1, Compiled{PTX: "p", SASSLines: huge, SASS: &nvidia.SASS{Arch: "sm_90"}}, errors.New("e"), false))
	got := readBack(t, line)
	if !ok || got.PTX != "p" || got.SASSLines != nil || got.SASS != nil || !strings.Contains(got.SASSLinesError, "too large to send") || got.Error != "e" {
		t.Errorf("counts too large: fits %v, PTX %q, counts left out %v, SASS left out %v, why %q, error %q", ok, got.PTX, got.SASSLines == nil, got.SASS == nil, got.SASSLinesError, got.Error)
	}
}

// A compile whose log alone passes the line (NVRTC quotes a long source line in each of 100
// errors: 1.3 MB from a 12.7 KB cell) fails as itself: its log's head comes back, cut and saying so,
// on a line the supervisor reads.
func TestCompileReplyCutsALongLog(t *testing.T) {
	log := strings.Repeat("cell.cu(1): error: identifier \"u0\" is undefined <here>\n", 2*maxLine/56)
	line, ok := replyLine(compileDone(1, Compiled{}, errors.New(log), true))
	got := readBack(t, line)
	if !ok || !strings.HasPrefix(got.Error, "cell.cu(1): error: identifier") || !strings.Contains(got.Error, "the compiler's log is cut here") {
		t.Errorf("a %d-byte log: fits %v, error of %d bytes ending %q", len(log), ok, len(got.Error), got.Error[max(0, len(got.Error)-80):])
	}
}
