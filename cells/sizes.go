package cells

import (
	"fmt"
	"strconv"
	"strings"
)

// maxSizes bounds how many sizes Sizes reads: a cell's sizes are a handful; a longer list is not one
// a server rewrites (a kind refuses it anyway).
const maxSizes = 64

// Sizes reads a cell's top-level `sizes:` key, written as a flow list of integers ("sizes: [256,
// 512, 4096]", a comment after it allowed), from its YAML header (the lines before a `---` line, for
// kinds that have one). ok is false where the cell has no such key, or writes it in another form
// (a block list, a number that is not a whole one, more than 64 sizes).
func Sizes(source string) (sizes []int, ok bool) {
	_, sizes, ok = sizesLine(source)
	return sizes, ok
}

// WithSizes is source with its `sizes:` line (Sizes) written as sizes, every other line as it
// was; ok is false, and source is returned as it was, where Sizes finds no such line.
func WithSizes(source string, sizes []int) (string, bool) {
	i, _, ok := sizesLine(source)
	if !ok {
		return source, false
	}
	lines := strings.SplitAfter(source, "\n")
	body := strings.TrimRight(lines[i], " \t\r\n")
	eol := lines[i][len(body):]
	parts := make([]string, len(sizes))
	for j, n := range sizes {
		parts[j] = strconv.Itoa(n)
	}
	lines[i] = fmt.Sprintf("sizes: [%s]%s", strings.Join(parts, ", "), eol)
	return strings.Join(lines, ""), true
}

// sizesLine finds the header's `sizes:` line: its index among the source's lines and its sizes.
func sizesLine(source string) (int, []int, bool) {
	for i, line := range strings.SplitAfter(source, "\n") {
		body := strings.TrimRight(line, " \t\r\n")
		if body == "---" {
			break
		}
		value, found := strings.CutPrefix(body, "sizes:")
		if !found {
			continue
		}
		if cut, _, comment := strings.Cut(value, "#"); comment {
			value = cut
		}
		value = strings.TrimSpace(value)
		if !strings.HasPrefix(value, "[") || !strings.HasSuffix(value, "]") {
			return 0, nil, false
		}
		list := value[1 : len(value)-1]
		if strings.Count(list, ",") >= maxSizes {
			return 0, nil, false
		}
		var sizes []int
		for _, f := range strings.Split(list, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return 0, nil, false
			}
			sizes = append(sizes, n)
		}
		return i, sizes, true
	}
	return 0, nil, false
}
