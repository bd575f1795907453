package server

import (
	"fmt"
	"log"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Identities cost something: the class is limited (and joins per address, where an operator sets
// it), the instructor sees and blocks the addresses students join from, names are compared by
// store.NameKey (NFKC and case folding) and may not mix scripts, and sessions expire.

// displayName is how a typed name is kept: NFKC (fullwidth letters, ligatures and the like become
// the plain ones) with white space collapsed to single spaces.
func displayName(typed string) string {
	return strings.Join(strings.Fields(norm.NFKC.String(typed)), " ")
}

// validName checks a display name (as displayName makes it): 1 to maxNameLen characters of
// letters, digits, spaces and . - _ ', whose letters and digits come from one script (see
// oneScript).
func validName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxNameLen {
		return fmt.Errorf("a name has 1 to %d characters", maxNameLen)
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" .-_'", r) {
			return fmt.Errorf("a name has letters, digits, spaces and . - _ ' only (not %q)", r)
		}
		// Letters that show as nothing (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, Khmer's
		// inherent vowels): "alice" with one is another name that looks the same.
		if unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
			return fmt.Errorf("a name has no invisible letters (not %U)", r)
		}
	}
	if !oneScript(name) {
		return fmt.Errorf("a name has letters of one script (not, say, Latin and Cyrillic letters that look alike)")
	}
	return nil
}

// scriptSets are the combinations of scripts one name may use besides a single script: Unicode
// TR39's "Highly Restrictive" level (Japanese, Chinese with Bopomofo, Korean, each with Latin).
var scriptSets = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

// oneScript reports whether the letters and digits of name come from one script (Common and
// Inherited characters go with any) or from one of scriptSets: Unicode TR39's restriction level
// "Highly Restrictive" (section 5.2), which refuses mixed-script confusables such as a Cyrillic а
// among Latin letters. It does not detect whole-script confusables (a name all in Cyrillic letters
// that look Latin): see docs/security.md.
func oneScript(name string) bool {
	used := map[string]bool{}
	for _, r := range name {
		if s := scriptOf(r); s != "" && s != "Common" && s != "Inherited" {
			used[s] = true
		}
	}
	if len(used) <= 1 {
		return true
	}
	for _, set := range scriptSets {
		n := 0
		for _, s := range set {
			if used[s] {
				n++
			}
		}
		if n == len(used) {
			return true
		}
	}
	return false
}

// scriptOf is the name of r's script in Go's unicode tables, or "" if none has it.
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return "Common"
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// safeNext is next if it is a path on this site (a single / followed by a letter, a digit or ?,
// or / alone, with no control characters, spaces or backslashes), else "/": a link may not send
// someone who joins to another site (//host, /\host, /%09/host, javascript:).
func safeNext(next string) string {
	if next == "/" {
		return next
	}
	if len(next) < 2 || next[0] != '/' || len(next) > 2048 {
		return "/"
	}
	if c := next[1]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '?') {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	if strings.Contains(strings.ToLower(next), "%2f%2f") || strings.Contains(next, "%5c") || strings.Contains(next, "%5C") {
		return "/"
	}
	return next
}

// addrLimits keeps a token bucket per client address: burst at once, then one more every interval;
// a token taken can be given back (reserve). At most max addresses are kept: when full, buckets
// that have filled up again (no different from new ones) are dropped, then the least recently used.
type addrLimits struct {
	every time.Duration
	burst int
	max   int

	mu sync.Mutex
	m  map[string]*addrBucket
}

// addrBucket is one address's tokens as of at; last is when the address last asked.
type addrBucket struct {
	tokens   float64
	at, last time.Time
}

func newAddrLimits(every time.Duration, burst, max int) *addrLimits {
	return &addrLimits{every: every, burst: burst, max: max, m: map[string]*addrBucket{}}
}

// tokensAt is b's tokens at now, refilled since b.at (at most burst).
func (a *addrLimits) tokensAt(b *addrBucket, now time.Time) float64 {
	return min(float64(a.burst), b.tokens+float64(now.Sub(b.at))/float64(a.every))
}

// bucketLocked is addr's bucket, made (full) if new and refilled to now; a.mu is held.
func (a *addrLimits) bucketLocked(addr string, now time.Time) *addrBucket {
	b := a.m[addr]
	if b == nil {
		if len(a.m) >= a.max {
			a.evictLocked(now)
		}
		b = &addrBucket{tokens: float64(a.burst), at: now}
		a.m[addr] = b
	}
	b.tokens, b.at, b.last = a.tokensAt(b, now), now, now
	return b
}

func (a *addrLimits) evictLocked(now time.Time) {
	var oldest string
	for k, b := range a.m {
		if a.tokensAt(b, now) >= float64(a.burst) {
			delete(a.m, k)
		} else if oldest == "" || b.last.Before(a.m[oldest].last) {
			oldest = k
		}
	}
	if len(a.m) >= a.max && oldest != "" {
		delete(a.m, oldest)
	}
}

// allow takes one token of addr's bucket, or reports that there is none.
func (a *addrLimits) allow(addr string) bool {
	_, ok := a.reserve(addr)
	return ok
}

// reserve takes one token of addr's bucket, or reports that there is none; undo gives it back (for
// what turned out not to count: a join that failed). Only the first call of undo counts.
func (a *addrLimits) reserve(addr string) (undo func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.bucketLocked(addr, time.Now())
	if b.tokens < 1 {
		return func() {}, false
	}
	b.tokens--
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.m[addr] == b { // else dropped (full again) since
				b.tokens = min(float64(a.burst), b.tokens+1)
			}
		})
	}, true
}

// size is how many addresses are kept (tests).
func (a *addrLimits) size() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// tooMany answers a request over a rate limit: 429 with Retry-After (seconds).
func tooMany(w http.ResponseWriter, after time.Duration, msg string) {
	w.Header().Set("Retry-After", fmt.Sprint(int(after.Seconds()+0.999)))
	http.Error(w, msg, http.StatusTooManyRequests)
}

// securityHeaders adds to every response: no framing by other pages (CSP frame-ancestors 'none',
// X-Frame-Options DENY), no MIME sniffing, and no Referer (with a class token in a URL) to other
// sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// stackLine matches a line of a Go stack trace or panic dump: "goroutine 7 [running]:", a frame's
// "\t/path/file.go:123 +0x1d", "[signal SIGSEGV ..." or "created by ...".
var stackLine = regexp.MustCompile(`(?m)^(goroutine \d+ \[|\t\S+\.go:\d+|\[signal |created by )`)

// clientText is msg as a client may see it: a message that carries a stack trace (a crashed GPU
// worker's last words, say) is cut to its first line, at most 300 bytes, with a pointer to the
// server's log, where the whole of it is written once, with what (a run, say).
func clientText(what, msg string) string {
	if !stackLine.MatchString(msg) {
		return msg
	}
	log.Printf("%s: %s", what, msg)
	first, _, _ := strings.Cut(msg, "\n")
	if stackLine.MatchString(first) {
		first = ""
	}
	first = strings.TrimRight(strings.TrimSpace(first), ":;,")
	if len(first) > 300 {
		first = first[:300]
		for !utf8.ValidString(first) {
			first = first[:len(first)-1]
		}
	}
	if first == "" {
		first = "internal error"
	}
	return first + " (the details are in the server's log)"
}
