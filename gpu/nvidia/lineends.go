package nvidia

import "strings"

// Line ends and line splices as clang reads them (Lexer::getEscapedNewLineSize), for the source
// rule (CheckIncludes) and the host-code scan (DeviceOnly) alike, so that the two never disagree
// with each other or with the compilers on where a line ends:
//
//   - a line ends at LF, at CR LF, and at a lone CR;
//   - a backslash, then any blanks (space, tab, form feed, vertical tab), then a line end, is a line
//     splice; clang and GCC take the blanks with a warning, NVRTC may not, so the source rule
//     refuses a splice with blanks (and a lone CR), which leaves CR LF and LF as the line ends and
//     backslash-line-end as the splice, read the same by every compiler;
//   - after a splice's backslash, CR LF and LF CR are one line end.
//
// Form feed and vertical tab end no line: clang reads them as blanks.

// text is what the line helpers read: a source, or a copy being blanked.
type text interface{ ~string | ~[]byte }

// lineBreak is the length of the line end at s[i]: 2 for CR LF, 1 for LF or a lone CR, 0 where
// none starts (or i is past the end).
func lineBreak[T text](s T, i int) int {
	switch {
	case i < 0 || i >= len(s):
		return 0
	case s[i] == '\n':
		return 1
	case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
		return 2
	case s[i] == '\r':
		return 1
	}
	return 0
}

// lineSplice is the length of the line splice whose backslash is at s[i] (0 where none starts
// there), and whether blanks stand between the backslash and the line end.
func lineSplice[T text](s T, i int) (n int, blanks bool) {
	if i < 0 || i >= len(s) || s[i] != '\\' {
		return 0, false
	}
	j := i + 1
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '\n' && s[j] != '\r' {
		return 0, false
	}
	blanks = j > i+1
	j++
	if j < len(s) && (s[j] == '\n' || s[j] == '\r') && s[j] != s[j-1] {
		j++ // CR LF or LF CR: one line end
	}
	return j - i, blanks
}

// lineEnd is the offset of the end of the logical line (its line splices joined) that holds
// offset i: where its line end (lineBreak) starts, or len(s).
func lineEnd[T text](s T, i int) int {
	for i < len(s) {
		if n, _ := lineSplice(s, i); n > 0 {
			i += n
			continue
		}
		if lineBreak(s, i) > 0 {
			return i
		}
		i++
	}
	return len(s)
}

// joinSplices is s without its line splices.
func joinSplices(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if n, _ := lineSplice(s, i); n > 0 {
			i += n - 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
