package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpuplayground/playground/store"
)

// Access: on a loopback server without a token everyone is the one local user and nothing asks to
// sign in. Otherwise (a non-loopback address, or a token given) every page, API call and the
// websocket need a session: a student joins with POST /join (fields token and name), which sets the
// session cookie. The student token lets students join; the instructor token, a separate one, makes
// the one who joins with it an instructor (/class). /static/, /cells/*.js (the kinds' browser
// modules), /healthz and /join itself are open: they hold nothing of anyone's.

// sessionCookie is the name of the session cookie.
const sessionCookie = "playground_session"

// maxNameLen bounds a display name, in characters.
const maxNameLen = 40

// localName is the one student of a server without sign-in; the parentheses keep it from ever
// being a joined student's name.
const localName = "(this computer)"

// newToken returns a random URL-safe token of 128 bits.
func newToken() string { return rand.Text() }

type studentKey struct{}

// studentOf is the signed-in student of a request (the local one when there is no sign-in).
func studentOf(ctx context.Context) store.Student {
	st, _ := ctx.Value(studentKey{}).(store.Student)
	return st
}

// sessions caches session → student, so that a page load does not ask the database.
type sessions struct {
	mu sync.Mutex
	m  map[string]store.Student
}

func (s *Server) sessionStudent(ctx context.Context, token string) (store.Student, bool) {
	s.sess.mu.Lock()
	st, ok := s.sess.m[token]
	s.sess.mu.Unlock()
	if ok {
		return st, true
	}
	st, ok, err := s.store.StudentBySession(ctx, token)
	if err != nil {
		log.Printf("session lookup: %v", err)
	}
	if ok {
		s.sess.mu.Lock()
		s.sess.m[token] = st
		s.sess.mu.Unlock()
	}
	return st, ok
}

// openPath reports whether a path is served without a session.
func openPath(p string) bool {
	return p == "/join" || p == "/healthz" || strings.HasPrefix(p, "/static/") || strings.HasPrefix(p, "/cells/")
}

// access puts the request's student in its context, or refuses it with the 403 sign-in page.
func (s *Server) access(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			// A form another site's page posts here (cross-site request forgery), with or without sign-in.
			http.Error(w, "a request from another site's page is refused", http.StatusForbidden)
			return
		}
		if !s.signIn {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), studentKey{}, s.local)))
			return
		}
		if c, err := r.Cookie(sessionCookie); err == nil {
			if st, ok := s.sessionStudent(r.Context(), c.Value); ok {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), studentKey{}, st)))
				return
			}
		}
		if openPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		// A page opened from the printed link (?token=…) shows the sign-in form with the token
		// filled in, as a 200; everything else without a session is a 403 that says what to do.
		tok := r.URL.Query().Get("token")
		if r.Method == http.MethodGet && tok != "" && s.tokenRole(tok) != "" && r.URL.Path != "/ws" && !strings.HasPrefix(r.URL.Path, "/api/") {
			s.joinPage(w, http.StatusOK, tok, "", pathWithout(r.URL, "token"), "")
			return
		}
		if r.URL.Path == "/ws" || strings.HasPrefix(r.URL.Path, "/api/") {
			http.Error(w, "sign in first: POST /join with the class token and a display name sets the session cookie", http.StatusForbidden)
			return
		}
		msg := ""
		if tok != "" {
			msg = "That token is not this class's. Check the link your instructor gave you."
		}
		s.joinPage(w, http.StatusForbidden, "", "", r.URL.RequestURI(), msg)
	})
}

// pathWithout is u's path and query without the query key.
func pathWithout(u *url.URL, key string) string {
	q := u.Query()
	q.Del(key)
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}

// sameOrigin reports whether a request's Origin header, if it has one (browsers send it with every
// cross-site POST), names this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// tokenRole says which token tok is: "student", "instructor" or "" (neither), in constant time.
func (s *Server) tokenRole(tok string) string {
	switch {
	case tok == "":
		return ""
	case subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.InstructorToken)) == 1:
		return "instructor"
	case subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1:
		return "student"
	}
	return ""
}

// joinPage renders the sign-in form.
func (s *Server) joinPage(w http.ResponseWriter, status int, token, name, next, problem string) {
	s.page(w, status, "join", map[string]any{"Token": token, "Name": name, "Next": next, "Problem": problem,
		"Forbidden": status == http.StatusForbidden})
}

// validName checks a display name: 1 to maxNameLen characters of letters, digits, spaces and . - _ '.
func validName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxNameLen {
		return fmt.Errorf("a name has 1 to %d characters", maxNameLen)
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" .-_'", r) {
			return fmt.Errorf("a name has letters, digits, spaces and . - _ ' only (not %q)", r)
		}
	}
	return nil
}

// join is POST /join: form fields token and name (and next, the page to go to). It adds the student
// and sets the session cookie (HttpOnly, SameSite=Strict, and Secure when the request came over
// TLS), then redirects (303) to next.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	tok, next := r.PostForm.Get("token"), r.PostForm.Get("next")
	name := strings.Join(strings.Fields(r.PostForm.Get("name")), " ")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		next = "/"
	}
	if !s.signIn {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	role := s.tokenRole(tok)
	if role == "" {
		s.joinPage(w, http.StatusForbidden, "", name, next, "That token is not this class's. Copy it from the link your instructor gave you (the part after ?token=).")
		return
	}
	if err := validName(name); err != nil {
		s.joinPage(w, http.StatusBadRequest, tok, name, next, "Your name: "+err.Error()+".")
		return
	}
	session := newToken()
	st, err := s.store.AddStudent(r.Context(), name, session, role == "instructor")
	if errors.Is(err, store.ErrNameTaken) {
		s.joinPage(w, http.StatusConflict, tok, name, next, fmt.Sprintf("Someone in this class is already called %q: pick another name. (Signed in before? Use the browser you joined with.)", name))
		return
	}
	if err != nil {
		log.Printf("join: %v", err)
		http.Error(w, "could not record you: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.sess.mu.Lock()
	s.sess.m[session] = st
	s.sess.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, Expires: time.Now().Add(365 * 24 * time.Hour)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// joinForm is GET /join: the sign-in form (the token prefilled from ?token=).
func (s *Server) joinForm(w http.ResponseWriter, r *http.Request) {
	if !s.signIn {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.joinPage(w, http.StatusOK, r.URL.Query().Get("token"), "", "/", "")
}

// instructorOnly refuses requests of anyone but an instructor (everyone is one without sign-in).
func (s *Server) instructorOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !studentOf(r.Context()).Instructor {
			http.Error(w, "this page is the instructor's: join with the instructor token", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}
