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
	if !ok {
		var err error
		st, ok, err = s.store.StudentBySession(ctx, token)
		if err != nil {
			log.Printf("session lookup: %v", err)
		}
		if !ok {
			return store.Student{}, false
		}
	}
	_, removed := s.removed.Load(st.ID)                         // removed while this lookup was under way, or cached before
	if removed || time.Since(st.SessionAt) > s.cfg.SessionTTL { // expired: it signs nobody in
		s.sess.mu.Lock()
		delete(s.sess.m, token)
		s.sess.mu.Unlock()
		return store.Student{}, false
	}
	s.sess.mu.Lock()
	if len(s.sess.m) < maxCachedSessions {
		s.sess.m[token] = st
	}
	s.sess.mu.Unlock()
	return st, true
}

// maxCachedSessions bounds the session cache; past it, sessions are looked up in the database.
const maxCachedSessions = 10000

// forgetSessions drops a student's sessions from the cache (their session was revoked).
func (s *Server) forgetSessions(student int64) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	for tok, st := range s.sess.m {
		if st.ID == student {
			delete(s.sess.m, tok)
		}
	}
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
			signedIn(r, 0)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), studentKey{}, s.local)))
			return
		}
		if c, err := r.Cookie(sessionCookie); err == nil {
			if st, ok := s.sessionStudent(r.Context(), c.Value); ok {
				if !signedIn(r, st.ID) {
					tooManyConns(w)
					return
				}
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
		if fromOtherSite(r) && r.Header.Get("Sec-Fetch-Dest") != "document" {
			tok = "" // an <img>, a frame or a script of another site's page: answered as without a token
		}
		if tok != "" && !s.attempt(r, tok) {
			tooManyGuesses(w)
			return
		}
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

// attempt reports whether a sign-in attempt with tok may be answered. The right token always may:
// a generated one has 128 random bits, which no number of guesses finds (an operator's own should
// be as strong: weakTokens), so a limit on wrong tokens would only lock a class out when a typo
// loop spends it. A wrong token uses up one of its address's attempts (Config.JoinAttempts, then
// one every joinAttemptEvery), and is refused (false) when the address has none left: the limit
// keeps scripted guessing from loading the server. Another site's page spends them only by
// top-level navigations (each one takes the browser away from that page): its subresource
// requests' tokens are not looked at (access), and its form posts are refused (join).
func (s *Server) attempt(r *http.Request, tok string) bool {
	if s.tokenRole(tok) != "" {
		return true
	}
	return s.attempts.allow(requestAddr(r))
}

// fromOtherSite reports whether a browser says another site's page made the request (Fetch
// Metadata: Sec-Fetch-Site cross-site or same-site), as an <img src=…?token=…> on any page open in
// the class's browsers is. Such a request's token is answered as no token at all, whatever it is,
// except on a top-level navigation (a learner following the class link from a chat or mail page),
// and its POST /join is refused: so a client that fakes the header learns nothing from it and
// guesses nothing past the attempts limit.
func fromOtherSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	return false
}

// minTokenLen is the fewest characters of a token an operator gives that weakTokens does not warn
// of: 16 random letters and digits are over 80 bits.
const minTokenLen = 16

// weakTokens is a warning, one line each, for the class and instructor tokens the operator gave
// (Config.Token, Config.InstructorToken) that are shorter than minTokenLen: since the right token is
// never refused, a short one can be found by guessing. "" when there is none.
func weakTokens(class, instructor string) string {
	var b strings.Builder
	for _, t := range []struct{ what, tok string }{{"class", class}, {"instructor", instructor}} {
		if t.tok != "" && len(t.tok) < minTokenLen {
			fmt.Fprintf(&b, "  warning: the %s token has %d characters: anyone who guesses it signs in (wrong guesses are slowed, the right one is never refused); give one of at least %d random characters, or none to have one generated\n",
				t.what, len(t.tok), minTokenLen)
		}
	}
	return b.String()
}

// tooManyGuesses answers a wrong token past its address's sign-in attempts: 429.
func tooManyGuesses(w http.ResponseWriter) {
	tooMany(w, joinAttemptEvery, "too many wrong sign-in tokens from your address: check the token your instructor gave you, then wait a few seconds")
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

// join is POST /join: form fields token and name (and next, the page to go to: a path of this
// site, safeNext). It adds the student and sets the session cookie (HttpOnly, SameSite=Strict,
// Secure when the request came over TLS, expiring with the session after Config.SessionTTL), then
// redirects (303) to next. Wrong tokens are limited per address (attempt); new students are
// limited by the class size (Config.MaxStudents), by the instructor's blocked addresses, and, only
// where Config.JoinsPerAddress is set, per address. An instructor is held to none of these.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxJoinForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: it could not be read (at most 16 KiB)", http.StatusBadRequest)
		return
	}
	tok, next := r.PostForm.Get("token"), safeNext(r.PostForm.Get("next"))
	name := displayName(r.PostForm.Get("name"))
	if !s.signIn {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if fromOtherSite(r) {
		http.Error(w, "a request from another site's page is refused", http.StatusForbidden)
		return
	}
	addr := requestAddr(r)
	if !s.attempt(r, tok) {
		tooManyGuesses(w)
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
	instructor := role == "instructor"
	giveBack := func() {}
	if !instructor && s.joins != nil {
		// The join is charged before the student is made, so that simultaneous joins cannot pass
		// the limit together; one that fails gives its place back.
		var ok bool
		if giveBack, ok = s.joins.reserve(addr); !ok {
			w.Header().Set("Retry-After", fmt.Sprint(int(s.joins.every.Seconds())))
			s.joinPage(w, http.StatusTooManyRequests, tok, name, next, fmt.Sprintf("Your address has joined %d names in the last %s, the limit: wait, or ask your instructor.", s.cfg.JoinsPerAddress, s.cfg.JoinWindow))
			return
		}
	}
	session := newToken()
	st, err := s.store.Join(r.Context(), name, session, addr, instructor, s.cfg.MaxStudents)
	if err != nil {
		giveBack()
	}
	switch {
	case errors.Is(err, store.ErrNameTaken):
		s.joinPage(w, http.StatusConflict, tok, name, next, fmt.Sprintf("Someone in this class is already called %q (or a name that differs only in case or width): pick another name. (Signed in before? Use the browser you joined with.)", name))
		return
	case errors.Is(err, store.ErrBlocked):
		s.joinPage(w, http.StatusForbidden, tok, name, next, "The instructor blocked joins from your network address: ask them.")
		return
	case errors.Is(err, store.ErrClassFull):
		s.joinPage(w, http.StatusForbidden, tok, name, next, fmt.Sprintf("The class is full (%d students): ask your instructor.", s.cfg.MaxStudents))
		return
	case err != nil:
		log.Printf("join: %v", err)
		http.Error(w, "could not record you (the server's log says why): try again", http.StatusInternalServerError)
		return
	}
	s.sess.mu.Lock()
	s.sess.m[session] = st
	s.sess.mu.Unlock()
	signedIn(r, st.ID) // a new student: under the cap
	expires := st.SessionAt.Add(s.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, Expires: expires, MaxAge: int((s.cfg.SessionTTL + time.Second - 1) / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// maxJoinForm bounds the join form's body, in bytes.
const maxJoinForm = 16 << 10

// joinAttemptEvery is how often an address gets one more sign-in attempt, past Config.JoinAttempts
// at once.
const joinAttemptEvery = 3 * time.Second

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
