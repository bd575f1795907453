// Package docs holds the guides that README.md points to, and this test of what README and they
// promise: README's first screen and length, that every relative link resolves, that every flag of
// the playground command is in flags.md, and that "How it is built" names every package.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const (
	// firstScreen is how many lines of README.md a visitor sees before scrolling.
	firstScreen = 30
	// maxReadmeLines is how long README.md may grow: it is read to the end by a newcomer; the
	// long guides live in docs/.
	maxReadmeLines = 160
)

// readmeCommands are the two set-up commands README's first screen gives, in this order.
var readmeCommands = []string{"go run ./cmd/playground", "go test ./..."}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fence is a markdown code fence's opening or closing line: three or more backticks or tildes.
var fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// codeBlock is a fenced code block: the line it opens on (1-based), its info string and its lines.
type codeBlock struct {
	line  int
	info  string
	lines []string
}

// split returns text's lines outside fenced code blocks (a line of a block, or of its fences, is
// "", so that line numbers stay right) and the blocks.
func split(text string) (prose []string, blocks []codeBlock) {
	prose = strings.Split(text, "\n")
	open := ""
	for i, line := range prose {
		m := fence.FindStringSubmatch(line)
		switch {
		case open == "" && m != nil:
			open = m[1]
			blocks = append(blocks, codeBlock{line: i + 1, info: strings.TrimSpace(line[len(m[0]):])})
		case open != "" && m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[len(m[0]):]) == "":
			open = ""
		case open != "":
			blocks[len(blocks)-1].lines = append(blocks[len(blocks)-1].lines, line)
		default:
			continue
		}
		prose[i] = ""
	}
	return prose, blocks
}

// prose returns text's lines outside fenced code blocks, as split does.
func prose(text string) []string {
	lines, _ := split(text)
	return lines
}

// README's first screen gives exactly two set-up commands, one that runs the playground and one
// that runs the tests, and .ci/run runs that same test command.
func TestReadmeFirstScreenGivesTheTwoCommands(t *testing.T) {
	_, blocks := split(read(t, "../README.md"))
	var first []codeBlock
	for _, b := range blocks {
		if b.line <= firstScreen {
			first = append(first, b)
		}
	}
	if len(first) != 1 {
		t.Fatalf("README's first %d lines hold %d code blocks, want 1 (the two commands)", firstScreen, len(first))
	}
	var got []string
	for _, line := range first[0].lines {
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			got = append(got, cmd)
		}
	}
	if !slices.Equal(got, readmeCommands) {
		t.Errorf("README's first screen gives %q, want %q", got, readmeCommands)
	}
	ci := strings.Split(read(t, "../.ci/run"), "\n")
	if !slices.ContainsFunc(ci, func(l string) bool { return strings.TrimSpace(l) == readmeCommands[1] }) {
		t.Errorf(".ci/run does not run README's test command %q", readmeCommands[1])
	}
}

// README stays short enough to read to the end.
func TestReadmeIsShort(t *testing.T) {
	text := read(t, "../README.md")
	if n := strings.Count(strings.TrimRight(text, "\n"), "\n") + 1; n > maxReadmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail to a guide in docs/", n, maxReadmeLines)
	}
}

// markdownFiles returns README.md and every docs/*.md, relative to this folder.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append([]string{"../README.md"}, docs...)
}

// link is a markdown link's or image's target, up to its closing parenthesis or a title.
var link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode is a code span, whose text is no link.
var inlineCode = regexp.MustCompile("`[^`]*`")

// Every relative link of README.md and docs/*.md names a file or folder that exists, and its
// #fragment, in a markdown file, a heading there.
func TestRelativeLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, file := range markdownFiles(t) {
		for i, line := range prose(read(t, file)) {
			for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "/") {
					continue // absolute: lesson links are checked by package lessons
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s:%d: link %s: %v", file, i+1, target, err)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(resolved, ".md") {
					continue
				}
				if anchors[resolved] == nil {
					anchors[resolved] = headingAnchors(read(t, resolved))
				}
				if !anchors[resolved][frag] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", file, i+1, target, resolved, frag)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("found no relative links to check")
	}
}

// heading is an ATX heading outside code: its text.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// headingAnchors returns the ids GitHub gives text's headings: lower case, punctuation dropped,
// spaces as dashes, a repeated one suffixed -1, -2, ….
func headingAnchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := anchor(m[1])
		if n := seen[id]; n > 0 {
			ids[id+"-"+strconv.Itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestHeadingAnchors(t *testing.T) {
	ids := headingAnchors("# Flags\n```sh\n# a comment\n```\n## playground worker\n## Problems\n## Problems\n### GPU: cuBLAS against the FP32 peak, the `ladder`\n" +
		"````markdown\n```cuda\n# in\n```\n# still in\n````\n## After\n")
	for _, want := range []string{"flags", "playground-worker", "problems", "problems-1", "gpu-cublas-against-the-fp32-peak-the-ladder", "after"} {
		if !ids[want] {
			t.Errorf("no anchor %q in %v", want, ids)
		}
	}
	for _, bad := range []string{"a-comment", "in", "still-in"} {
		if ids[bad] {
			t.Errorf("%q, in a code block, counted as a heading", bad)
		}
	}
}

// flagMethods are the flag.FlagSet methods that define a flag, and the index of the name among
// their arguments.
var flagMethods = map[string]int{
	"Bool": 0, "BoolVar": 1, "Duration": 0, "DurationVar": 1, "Float64": 0, "Float64Var": 1,
	"Int": 0, "IntVar": 1, "Int64": 0, "Int64Var": 1, "String": 0, "StringVar": 1,
	"Uint": 0, "UintVar": 1, "Uint64": 0, "Uint64Var": 1, "Var": 1, "Func": 0, "BoolFunc": 0, "TextVar": 1,
}

// definedFlags returns the names of the flags that the Go files of dir define.
func definedFlags(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			i, ok := flagMethods[sel.Sel.Name]
			if !ok || len(call.Args) < i+2 {
				return true
			}
			if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if name, err := strconv.Unquote(lit.Value); err == nil {
					flags[name] = true
				}
			}
			return true
		})
	}
	return flags
}

// documentedFlag is a flag named in the first column of a table row: | `-name …`, `-other` |.
var documentedFlag = regexp.MustCompile("`-([a-z0-9-]+)")

// documentedFlags returns the flags that text's tables name in their first column.
func documentedFlags(text string) map[string]bool {
	flags := map[string]bool{}
	for _, line := range prose(text) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		for _, m := range documentedFlag.FindAllStringSubmatch(cells[1], -1) {
			flags[m[1]] = true
		}
	}
	return flags
}

// Every flag that cmd/playground defines (the server's and the worker's) is in a table of
// docs/flags.md, and every flag there is one it defines.
func TestFlagsAreDocumented(t *testing.T) {
	defined := definedFlags(t, "../cmd/playground")
	for _, want := range []string{"addr", "join"} {
		if !defined[want] {
			t.Fatalf("found no -%s among cmd/playground's flags %v: have the flags moved? make definedFlags find them", want, defined)
		}
	}
	documented := documentedFlags(read(t, "flags.md"))
	for name := range defined {
		if !documented[name] {
			t.Errorf("flag -%s is not in docs/flags.md", name)
		}
	}
	for name := range documented {
		if !defined[name] {
			t.Errorf("docs/flags.md documents -%s, which cmd/playground does not define", name)
		}
	}
}

// packages returns the module's package folders, relative to its root: every folder with a Go
// file, but testdata and the internal folders of a package (its generators and tables, told of
// with it).
func packages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || strings.Contains(rel, "/internal/")) {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(rel)); strings.HasSuffix(path, ".go") && dir != "." && !slices.Contains(pkgs, dir) {
			pkgs = append(pkgs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// section returns the text of text's heading "## title" (or "# title") up to the next heading of
// its level or above.
func section(t *testing.T, text, file, title string) string {
	t.Helper()
	for _, level := range []string{"## ", "# "} {
		start := strings.Index(text, "\n"+level+title+"\n")
		if start < 0 && strings.HasPrefix(text, level+title+"\n") {
			start = 0
		}
		if start < 0 {
			continue
		}
		rest := text[start+1+len(level)+len(title):]
		if end := strings.Index(rest, "\n"+level); end >= 0 {
			rest = rest[:end]
		}
		return rest
	}
	t.Fatalf("%s has no heading %q", file, title)
	return ""
}

// README's "How it is built", and docs/architecture.md in full, name every package of the module.
func TestHowItIsBuiltNamesEveryPackage(t *testing.T) {
	pkgs := packages(t, "..")
	if !slices.Contains(pkgs, "server") || !slices.Contains(pkgs, "internal/testcert") {
		t.Fatalf("package list %v lacks server or internal/testcert", pkgs)
	}
	for _, doc := range []struct{ file, title string }{
		{"../README.md", "How it is built"},
		{"architecture.md", "How it is built"},
	} {
		text := section(t, read(t, doc.file), doc.file, doc.title)
		for _, p := range pkgs {
			if !strings.Contains(text, "`"+p+"`") {
				t.Errorf("%s, %q, does not name package `%s`", doc.file, doc.title, p)
			}
		}
	}
}
