package cellstest

import (
	"fmt"
	"strconv"
	"strings"
)

// SmallMaxN caps the size Small keeps: the lessons' smallest matrix size, at which the recorded GPU
// results of every recorded cell have rows.
const SmallMaxN = 256

// Small returns a cell's source at a test's size: in its YAML header (up to a line "---", if any),
// a `sizes:` list keeps only its smallest size, at most SmallMaxN, and `repeats:` becomes 1;
// everything else, the kernels and a cuda or wgsl cell's code included, stays. A cell then runs
// every kernel through every path it takes at its full sizes, except those only larger sizes reach
// (the virtual GPU's sampled blocks above vgpurun.MaxN, and its note above vgpurun.MaxSampledN), in
// a fraction of the time. Tests that run every lesson cell use it; BenchmarkLessonCells and
// TestEveryCellRuns -full run them as written.
func Small(source string) string { return SmallAt(source, SmallMaxN) }

// SmallAt is Small with the size kept capped at maxN instead of SmallMaxN: a test of cells that
// replay no recording (whose rows need no particular size) may run them smaller still.
func SmallAt(source string, maxN int) string {
	lines := strings.SplitAfter(source, "\n")
	for i, line := range lines {
		body := strings.TrimRight(line, " \t\r\n")
		if body == "---" {
			break
		}
		eol := line[len(body):]
		switch key, value, _ := strings.Cut(body, ":"); strings.TrimSpace(key) {
		case "sizes":
			if smallest, ok := smallestSize(value); ok {
				lines[i] = fmt.Sprintf("%s: [%d]%s", key, min(smallest, maxN), eol)
			}
		case "repeats":
			lines[i] = key + ": 1" + eol
		}
	}
	return strings.Join(lines, "")
}

// smallestSize reads a flow list of sizes, "[64, 128]", and returns the smallest; false if value is
// not such a list (it is then left as written).
func smallestSize(value string) (int, bool) {
	value = strings.TrimSpace(value)
	if cut, _, found := strings.Cut(value, "#"); found {
		value = strings.TrimSpace(cut)
	}
	if !strings.HasPrefix(value, "[") || !strings.HasSuffix(value, "]") {
		return 0, false
	}
	smallest := 0
	for _, f := range strings.Split(value[1:len(value)-1], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return 0, false
		}
		if smallest == 0 || n < smallest {
			smallest = n
		}
	}
	return smallest, smallest > 0
}
