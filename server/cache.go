package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// revalidateControl is the Cache-Control of the static files and the kinds' scripts: a browser may
// keep them, but asks again on each use (If-None-Match with the ETag it holds) and gets 304 Not
// Modified, without the body, while the file is the one it has. A server started from a new build
// answers with the new file at once: nothing is served from a browser's cache unasked.
const revalidateControl = "no-cache"

// contentETag is the strong entity tag of content: the first 16 bytes of its SHA-256, in hex and
// quoted.
func contentETag(content []byte) string {
	sum := sha256.Sum256(content)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// fileETags hashes every file of fsys (contentETag), by its path there. A file that cannot be read
// gets no tag (h serves its error as it would).
func fileETags(fsys fs.FS) map[string]string {
	tags := map[string]string{}
	_ = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := fs.ReadFile(fsys, name); err == nil {
			tags[name] = contentETag(b)
		}
		return nil
	})
	return tags
}

// revalidated serves the files of fsys (which must not change while it serves: an embedded FS) with
// h, each response with its content's ETag and Cache-Control no-cache (revalidateControl), so that
// a browser loading page after page fetches each script once and then only asks whether it
// changed; h (an http.FileServerFS) answers a request whose If-None-Match holds the tag with 304
// Not Modified. The tags are computed once, here.
func revalidated(fsys fs.FS, h http.Handler) http.Handler {
	tags := fileETags(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tag, ok := tags[strings.TrimPrefix(r.URL.Path, "/")]; ok {
			w.Header().Set("ETag", tag)
			w.Header().Set("Cache-Control", revalidateControl)
		}
		h.ServeHTTP(w, r)
	})
}

// serveRevalidated writes content, a generated file named name (its extension gives the type
// unless the header has one), as revalidated serves a static file: with its ETag and Cache-Control
// no-cache, and 304 Not Modified to a request whose If-None-Match holds the tag.
func serveRevalidated(w http.ResponseWriter, r *http.Request, name, content string) {
	w.Header().Set("ETag", contentETag([]byte(content)))
	w.Header().Set("Cache-Control", revalidateControl)
	http.ServeContent(w, r, name, time.Time{}, strings.NewReader(content))
}
