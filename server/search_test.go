package server

import (
	"strings"
	"testing"
)

// The index page's search index holds every lesson with its prose by heading, the anchors its
// results link to.
func TestSearchIndex(t *testing.T) {
	_, base := startServer(t, Config{})
	var entries []searchEntry
	if err := getJSON(t, base+"/api/search", &entries); err != nil {
		t.Fatal(err)
	}
	index := getBody(t, base+"/")
	if got, want := len(entries), strings.Count(index, `<li data-slug="`); got != want || got == 0 {
		t.Fatalf("%d lessons in the search index, %d on the index page", got, want)
	}
	var found bool
	for _, e := range entries {
		if e.Title == "" || len(e.Sections) == 0 {
			t.Errorf("lesson %q: title %q, %d sections", e.Slug, e.Title, len(e.Sections))
		}
		for _, s := range e.Sections {
			if s.Heading != "" && s.ID == "" {
				t.Errorf("lesson %q: section %q has no anchor", e.Slug, s.Heading)
			}
			found = found || strings.Contains(strings.ToLower(s.Text), "bank conflict")
		}
	}
	if !found {
		t.Error("no section's text mentions bank conflicts")
	}
}

// The index lists, for each lesson, how many experiments and challenges it has (the progress marks
// count against them); a lesson page has its pager above and below the lesson.
func TestIndexCountsAndPagers(t *testing.T) {
	_, base := startServer(t, Config{})
	index := getBody(t, base+"/")
	if !strings.Contains(index, `<li data-slug="shared-memory-tiling" data-cells="`) || strings.Contains(index, `data-slug="shared-memory-tiling" data-cells="0"`) {
		t.Errorf("the index does not count shared-memory-tiling's experiments")
	}
	if !strings.Contains(index, `id="lesson-search"`) {
		t.Error("the index has no search box")
	}
	page := getBody(t, base+"/lessons/fast-cpu-matmul")
	article := strings.Index(page, "<article>")
	end := strings.Index(page, "</article>")
	before, after := strings.Index(page, `rel="next" href="/lessons/simd-and-registers"`), strings.LastIndex(page, `rel="next" href="/lessons/simd-and-registers"`)
	if !(before >= 0 && before < article && end < after) {
		t.Errorf("pager links at %d and %d, want one before the article (at %d) and one after it (ends at %d)", before, after, article, end)
	}
}
