package server

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/gpuplayground/playground/static"
)

// getWith GETs url, with If-None-Match: etag unless etag is "", and returns the status, the body,
// the ETag and the Cache-Control of the answer.
func getWith(t *testing.T, url, etag string) (code int, body, tag, control string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("ETag"), resp.Header.Get("Cache-Control")
}

// The static files and the kinds' scripts carry their content's hash as ETag and Cache-Control
// no-cache: a browser asks again on each page load and gets 304 Not Modified, without the body
// (editor.bundle.js is about 480 KB), while it holds the file the server has.
func TestStaticFilesAndKindScriptsRevalidate(t *testing.T) {
	_, base := startServer(t, Config{})
	bundle, err := fs.ReadFile(static.FS, "editor.bundle.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"/static/editor.bundle.js", contentETag(bundle)},
		{"/static/webgpu/runner.js", ""},
		{"/cells/matmul.js", ""},
	} {
		code, body, tag, control := getWith(t, base+c.path, "")
		if code != http.StatusOK || body == "" || tag == "" || control != "no-cache" {
			t.Fatalf("%s: status %d, %d bytes, ETag %q, Cache-Control %q; want 200, the file, a tag and no-cache", c.path, code, len(body), tag, control)
		}
		if c.want != "" && tag != c.want {
			t.Errorf("%s: ETag %s, want the content's hash %s", c.path, tag, c.want)
		}
		if code, again, _, _ := getWith(t, base+c.path, tag); code != http.StatusNotModified || again != "" {
			t.Errorf("%s with If-None-Match %s: status %d, %d bytes; want 304 and no body", c.path, tag, code, len(again))
		}
		if code, again, _, _ := getWith(t, base+c.path, `"another"`); code != http.StatusOK || again != body {
			t.Errorf("%s with another tag: status %d, %d bytes; want 200 and the file", c.path, code, len(again))
		}
	}
}

// A browser holding a file of an earlier build gets the new build's file at once: the tag is the
// content's, so a changed file answers a request for the old tag with 200 and the new content.
func TestRevalidatedServesANewBuild(t *testing.T) {
	serve := func(content string) *httptest.Server {
		fsys := fstest.MapFS{"app.js": {Data: []byte(content)}}
		srv := httptest.NewServer(revalidated(fsys, http.FileServerFS(fsys)))
		t.Cleanup(srv.Close)
		return srv
	}
	old := serve("export const v = 1;\n")
	_, _, oldTag, _ := getWith(t, old.URL+"/app.js", "")
	if code, _, _, _ := getWith(t, old.URL+"/app.js", oldTag); code != http.StatusNotModified {
		t.Fatalf("the same build: status %d for its own tag, want 304", code)
	}
	build := serve("export const v = 2;\n")
	code, body, tag, control := getWith(t, build.URL+"/app.js", oldTag)
	if code != http.StatusOK || body != "export const v = 2;\n" || tag == oldTag || tag == "" || control != "no-cache" {
		t.Errorf("a new build asked with the old tag %s: status %d, body %q, ETag %q, Cache-Control %q; want 200, the new file, a new tag, no-cache",
			oldTag, code, body, tag, control)
	}
}
