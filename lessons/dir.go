package lessons

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Library gives the lessons to serve now.
type Library interface {
	Lessons() []*Lesson
}

// Fixed is a Library whose lessons never change (the embedded ones).
type Fixed []*Lesson

// Lessons returns the fixed list.
func (f Fixed) Lessons() []*Lesson { return f }

// Dir is a Library over a directory of *.md files (and recorded/*.json) that re-reads them when
// their names, sizes or modification times change, so authors see edits on reload. After a successful first load, a lesson
// that breaks is kept in the list with Err set (its page shows the file:line error) instead of failing.
type Dir struct {
	dir   string
	kinds Kinds

	mu      sync.Mutex
	stamp   string
	lessons []*Lesson
}

// OpenDir loads every lesson in dir; any error (naming file:line) fails it, as at start-up.
func OpenDir(dir string, kinds Kinds) (*Dir, error) {
	d := &Dir{dir: dir, kinds: kinds}
	stamp, err := d.stampNow()
	if err != nil {
		return nil, err
	}
	ls, err := Load(os.DirFS(dir), kinds)
	if err != nil {
		var le *Error
		if errors.As(err, &le) {
			le.File = filepath.Join(dir, le.File)
		}
		return nil, err
	}
	if len(ls) == 0 {
		return nil, fmt.Errorf("no lessons (*.md) in %s", dir)
	}
	d.stamp, d.lessons = stamp, ls
	return d, nil
}

// Lessons re-reads the directory if anything in it changed since the last call.
func (d *Dir) Lessons() []*Lesson {
	d.mu.Lock()
	defer d.mu.Unlock()
	stamp, err := d.stampNow()
	if err != nil || stamp == d.stamp {
		return d.lessons
	}
	names, _ := fs.Glob(os.DirFS(d.dir), "*.md")
	var ls []*Lesson
	for _, name := range names {
		full := filepath.Join(d.dir, name)
		src, err := os.ReadFile(full)
		if err == nil {
			var l *Lesson
			if l, err = Parse(full, src, d.kinds); err == nil {
				ls = append(ls, l)
				continue
			}
		}
		ls = append(ls, &Lesson{Slug: strings.TrimSuffix(name, ".md"), File: full, Err: err})
	}
	err = uniqueIDs(ls)
	if err == nil {
		err = loadRecordings(os.DirFS(d.dir), ls)
	}
	if err != nil {
		for _, l := range ls {
			if l.Err == nil {
				l.Err = err
			}
		}
	}
	Sort(ls)
	d.stamp, d.lessons = stamp, ls
	return ls
}

func (d *Dir) stampNow() (string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return "", err
	}
	recorded, _ := os.ReadDir(filepath.Join(d.dir, "recorded"))
	var b strings.Builder
	for _, e := range append(entries, recorded...) {
		if !strings.HasSuffix(e.Name(), ".md") && !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String(), nil
}
