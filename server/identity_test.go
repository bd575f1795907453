package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuplayground/playground/store"
)

// clientFrom is an HTTP client whose connections come from the loopback address ip, with a cookie
// jar, that does not follow redirects.
func clientFrom(ip string) *http.Client {
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// postJoin posts the join form from c and returns the response (its body read and closed).
func postJoin(t *testing.T, c *http.Client, base string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.PostForm(base+"/join", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// joinStatus joins name with token from address ip and returns the status.
func joinStatus(t *testing.T, base, ip, token, name string) int {
	t.Helper()
	resp, _ := postJoin(t, clientFrom(ip), base, url.Values{"token": {token}, "name": {name}})
	return resp.StatusCode
}

// One address joins at most JoinsPerAddress students (then 429 with Retry-After); instructors are
// not counted, and another address still joins.
func TestAbuseJoinsLimitedPerAddress(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinsPerAddress = 3
	_, base := startServer(t, cfg)
	for i := range 3 {
		if got, want := joinStatus(t, base, "127.0.0.5", "class-token", fmt.Sprint("bot", i)), http.StatusSeeOther; got != want {
			t.Fatalf("join %d: got %d, want %d", i, got, want)
		}
	}
	resp, body := postJoin(t, clientFrom("127.0.0.5"), base, url.Values{"token": {"class-token"}, "name": {"bot3"}})
	if got, want := resp.StatusCode, http.StatusTooManyRequests; got != want || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "limit") {
		t.Errorf("the 4th join of one address: got %d (Retry-After %q), want %d saying the limit", got, resp.Header.Get("Retry-After"), want)
	}
	if got, want := joinStatus(t, base, "127.0.0.5", "teach", "Teacher"), http.StatusSeeOther; got != want {
		t.Errorf("the instructor from that address: got %d, want %d", got, want)
	}
	if got, want := joinStatus(t, base, "127.0.0.6", "class-token", "Ada"), http.StatusSeeOther; got != want {
		t.Errorf("another address: got %d, want %d", got, want)
	}
}

// getLink asks for path (with a ?token=) from c, as a browser with the Fetch Metadata headers
// (site, mode, dest; none when site is ""), and returns the status.
func getLink(t *testing.T, c *http.Client, url, site, mode, dest string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
		req.Header.Set("Sec-Fetch-Mode", mode)
		req.Header.Set("Sec-Fetch-Dest", dest)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Wrong tokens are limited per address (posted, or in a page's ?token=): past JoinAttempts they
// are answered 429. The right token from that address is never refused, posted or in the class
// link; another address is not held back.
func TestAbuseTokenGuessesLimited(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinAttempts = 5
	_, base := startServer(t, cfg)
	guesser := clientFrom("127.0.0.7")
	for i := range 4 {
		if resp, _ := postJoin(t, guesser, base, url.Values{"token": {fmt.Sprint("guess", i)}, "name": {"Eve"}}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("guess %d: got %d, want 403", i, resp.StatusCode)
		}
	}
	if got, want := getLink(t, guesser, base+"/?token=guess4", "", "", ""), http.StatusForbidden; got != want {
		t.Errorf("the 5th guess, in a link: got %d, want %d", got, want)
	}
	if resp, _ := postJoin(t, guesser, base, url.Values{"token": {"guess5"}, "name": {"Eve"}}); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the attempts, a wrong token: got %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got, want := getLink(t, guesser, base+"/?token=guess6", "none", "navigate", "document"), http.StatusTooManyRequests; got != want {
		t.Errorf("past the attempts, a wrong token in a link: got %d, want %d", got, want)
	}
	if got, want := getLink(t, guesser, base+"/?token=class-token", "none", "navigate", "document"), http.StatusOK; got != want {
		t.Errorf("past the attempts, the class link: got %d, want %d (the sign-in form)", got, want)
	}
	if resp, _ := postJoin(t, guesser, base, url.Values{"token": {"class-token"}, "name": {"Eve"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("past the attempts, the right token: got %d, want 303", resp.StatusCode)
	}
	if got, want := joinStatus(t, base, "127.0.0.7", "teach", "Teacher"), http.StatusSeeOther; got != want {
		t.Errorf("past the attempts, the instructor token: got %d, want %d", got, want)
	}
	if got, want := joinStatus(t, base, "127.0.0.8", "class-token", "Ada"), http.StatusSeeOther; got != want {
		t.Errorf("another address: got %d, want %d", got, want)
	}
}

// Another site's page cannot spend a class's sign-in attempts: image, script and frame requests
// with a wrong ?token= that the browser marks cross-site (or same-site) use none, so the address's
// own wrong tokens are still answered 403 until JoinAttempts of them, and only then 429.
func TestCrossSiteTokensSpendNoAttempts(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinAttempts = 2
	_, base := startServer(t, cfg)
	c := clientFrom("127.0.0.12")
	for i, fetch := range [][3]string{
		{"cross-site", "no-cors", "image"}, {"cross-site", "no-cors", "image"}, {"cross-site", "no-cors", "script"},
		{"cross-site", "navigate", "iframe"}, {"same-site", "no-cors", "image"}, {"cross-site", "no-cors", "image"},
	} {
		if got, want := getLink(t, c, fmt.Sprintf("%s/?token=wrong%d", base, i), fetch[0], fetch[1], fetch[2]), http.StatusForbidden; got != want {
			t.Errorf("request %d from another site %v: got %d, want %d", i, fetch, got, want)
		}
	}
	for i, want := range []int{http.StatusForbidden, http.StatusForbidden, http.StatusTooManyRequests} {
		if got := getLink(t, c, fmt.Sprintf("%s/?token=typo%d", base, i), "none", "navigate", "document"); got != want {
			t.Errorf("the address's own wrong token %d after another site's: got %d, want %d", i, got, want)
		}
	}
}

// Faking Fetch Metadata gains a guesser nothing: another site's subresource request is answered
// the same whatever its token (the right one too: nothing learnt), its top-level navigation counts
// like any other, and a join form that says it comes from another site is refused, the right
// token too; the address's own attempts are spent by the counted ones only.
func TestFakedCrossSiteHeadersGuessNothing(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinAttempts = 2
	_, base := startServer(t, cfg)
	c := clientFrom("127.0.0.13")
	for _, tok := range []string{"wrong", cfg.Token} {
		if got, want := getLink(t, c, base+"/?token="+tok, "cross-site", "no-cors", "image"), http.StatusForbidden; got != want {
			t.Errorf("another site's image with token %q: got %d, want %d", tok, got, want)
		}
	}
	if got, want := getLink(t, c, base+"/?token="+cfg.Token, "cross-site", "navigate", "document"), http.StatusOK; got != want {
		t.Errorf("the class link followed from another site: got %d, want %d", got, want)
	}
	for _, tok := range []string{"wrong", cfg.Token} {
		req, _ := http.NewRequest("POST", base+"/join", strings.NewReader(url.Values{"token": {tok}, "name": {"Mallory"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusForbidden; got != want {
			t.Errorf("a join form from another site with token %q: got %d, want %d", tok, got, want)
		}
	}
	for i, want := range []int{http.StatusForbidden, http.StatusForbidden, http.StatusTooManyRequests} {
		if got := getLink(t, c, fmt.Sprintf("%s/?token=typo%d", base, i), "cross-site", "navigate", "document"); got != want {
			t.Errorf("wrong token %d on a navigation from another site: got %d, want %d", i, got, want)
		}
	}
}

// A class behind one address, with the default limits: 60 students open the class link and join
// with the right token at once, while a typo loop on that address sends wrong tokens; all 60 get
// in and sign in. The wrong tokens are answered 429 after JoinAttempts of them; the class fills to
// MaxStudents (200) from that one address, and the next student is refused for the class size.
func TestClassBehindOneAddressJoins(t *testing.T) {
	cfg := classConfig(t)
	_, base := startServer(t, cfg)
	const ip = "127.0.0.9"
	errs := make(chan error, 60)
	for i := range 60 {
		go func() { errs <- joinLikeBrowser(base, ip, fmt.Sprint("student", i)) }()
	}
	refused := 0
	for i := range 30 {
		resp, _ := postJoin(t, clientFrom(ip), base, url.Values{"token": {fmt.Sprint("typo", i)}, "name": {"Eve"}})
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		} else if resp.StatusCode != http.StatusForbidden {
			t.Errorf("typo %d: got %d, want 403 or 429", i, resp.StatusCode)
		}
	}
	for range 60 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// An attempt comes back every 3 s: at most one more than JoinAttempts passes during the test.
	if got, want := 30-refused, 20; got < want || got > want+1 {
		t.Errorf("wrong tokens answered 403: got %d, want %d (the rest 429)", got, want)
	}
	for i := 60; i < 200; i++ {
		if got, want := joinStatus(t, base, ip, "class-token", fmt.Sprint("student", i)), http.StatusSeeOther; got != want {
			t.Fatalf("student %d of the class's 200, from one address: got %d, want %d", i, got, want)
		}
	}
	resp, body := postJoin(t, clientFrom(ip), base, url.Values{"token": {"class-token"}, "name": {"student200"}})
	if got, want := resp.StatusCode, http.StatusForbidden; got != want || !strings.Contains(body, "class is full") {
		t.Errorf("the 201st student: got %d, want %d saying the class is full", got, want)
	}
}

// joinLikeBrowser does what a student's browser does with the class link, from address ip: opens
// it (the sign-in form), posts the form, follows the redirect signed in.
func joinLikeBrowser(base, ip, name string) error {
	c := clientFrom(ip)
	step := func(what string, resp *http.Response, err error, want int) error {
		if err != nil {
			return fmt.Errorf("%s %s: %v", name, what, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: got %d, want %d", name, what, resp.StatusCode, want)
		}
		return nil
	}
	resp, err := c.Get(base + "/?token=class-token")
	if err := step("opening the class link", resp, err, http.StatusOK); err != nil {
		return err
	}
	resp, err = c.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {name}})
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		// At the address's cap of connections not signed in, the server closes the oldest idle one,
		// which this client may be reusing at that moment: a browser sends the request again when a
		// kept-alive connection closes before any answer (Go's client does not, for a POST).
		resp, err = c.PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {name}})
	}
	if err := step("joining", resp, err, http.StatusSeeOther); err != nil {
		return err
	}
	resp, err = c.Get(base + resp.Header.Get("Location"))
	return step("signed in", resp, err, http.StatusOK)
}

// Simultaneous joins from one address cannot pass -joins-per-address together: of 20 at once
// against a limit of 10, exactly 10 join.
func TestAbuseSimultaneousJoinsLimited(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinsPerAddress = 10
	_, base := startServer(t, cfg)
	codes := make(chan int, 20)
	for i := range 20 {
		go func() {
			resp, err := clientFrom("127.0.0.10").PostForm(base+"/join", url.Values{"token": {"class-token"}, "name": {fmt.Sprint("racer", i)}})
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	joined, limited := 0, 0
	for range 20 {
		switch <-codes {
		case http.StatusSeeOther:
			joined++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if joined != 10 || limited != 10 {
		t.Errorf("20 simultaneous joins against a limit of 10: got %d joined and %d refused (429), want 10 and 10", joined, limited)
	}
	// A join that fails (the name taken) gives its place back.
	cfg.JoinsPerAddress = 1
	_, base = startServer(t, cfg)
	if got, want := joinStatus(t, base, "127.0.0.11", "teach", "Taken"), http.StatusSeeOther; got != want {
		t.Fatalf("the instructor: got %d, want %d", got, want)
	}
	if got, want := joinStatus(t, base, "127.0.0.11", "class-token", "Taken"), http.StatusConflict; got != want {
		t.Fatalf("a taken name: got %d, want %d", got, want)
	}
	if got, want := joinStatus(t, base, "127.0.0.11", "class-token", "Free"), http.StatusSeeOther; got != want {
		t.Errorf("after a failed join, the address's one join: got %d, want %d", got, want)
	}
}

// The per-address buckets are bounded: past max addresses, old ones are dropped.
func TestAddrLimitsBounded(t *testing.T) {
	a := newAddrLimits(time.Hour, 1, 3)
	if !a.allow("a") || a.allow("a") {
		t.Fatal("a burst of 1: want one allowed, then none")
	}
	for i := range 100 {
		a.allow(fmt.Sprint("10.0.0.", i))
	}
	if got, want := a.size(), 3; got > want {
		t.Errorf("addresses kept: got %d, want at most %d", got, want)
	}
}

// The class has at most MaxStudents students; instructors join past it, and a removed student
// frees a place.
func TestAbuseClassFull(t *testing.T) {
	cfg := classConfig(t)
	cfg.MaxStudents = 2
	_, base := startServer(t, cfg)
	join(t, base, "class-token", "Ada")
	join(t, base, "class-token", "Bob")
	resp, body := postJoin(t, clientFrom("127.0.0.1"), base, url.Values{"token": {"class-token"}, "name": {"Cy"}})
	if got, want := resp.StatusCode, http.StatusForbidden; got != want || !strings.Contains(body, "class is full") {
		t.Errorf("a third student: got %d, want %d saying the class is full", got, want)
	}
	teacher := join(t, base, "teach", "Teacher")
	id := studentID(t, teacher, "Bob")
	if got, want := teacher.post(t, "/api/class/remove", url.Values{"student": {fmt.Sprint(id)}}), http.StatusNoContent; got != want {
		t.Fatalf("removing Bob: got %d, want %d", got, want)
	}
	join(t, base, "class-token", "Cy")
}

// studentID finds a student's id in the instructor's /api/class.
func studentID(t *testing.T, teacher *student, name string) int64 {
	t.Helper()
	code, body := teacher.get(t, "/api/class")
	var class struct {
		Students []classStudent `json:"students"`
	}
	if err := json.Unmarshal([]byte(body), &class); code != http.StatusOK || err != nil {
		t.Fatalf("/api/class: %d %v", code, err)
	}
	for _, s := range class.Students {
		if s.Name == name {
			return s.ID
		}
	}
	t.Fatalf("/api/class has no %q: %s", name, body)
	return 0
}

// Names compare after NFKC and case folding, and may not mix scripts; names in one script (or
// Japanese's) join, and are kept in their NFKC form.
func TestNamesFoldedAndOfOneScript(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinsPerAddress = 100
	_, base := startServer(t, cfg)
	for _, tt := range []struct {
		name string
		want int
	}{
		{"álice", http.StatusSeeOther},
		{"ÁLICE", http.StatusConflict},
		{"Ada", http.StatusSeeOther},
		{"ａｄａ", http.StatusConflict}, // fullwidth
		{"Straße", http.StatusSeeOther},
		{"STRASSE", http.StatusConflict},
		{"\u0430lice", http.StatusBadRequest},                   // Cyrillic а among Latin letters
		{"Bob\u200b", http.StatusBadRequest},                    // a zero-width space
		{"\u0410\u043b\u0438\u0441\u0430", http.StatusSeeOther}, // Алиса, all Cyrillic
		{"山田 たろう", http.StatusSeeOther},
		{"Ｇｒａｃｅ", http.StatusSeeOther},
	} {
		if got := joinStatus(t, base, "127.0.0.1", "class-token", tt.name); got != tt.want {
			t.Errorf("join %q: got %d, want %d", tt.name, got, tt.want)
		}
	}
	teacher := join(t, base, "teach", "Teacher")
	studentID(t, teacher, "Grace") // kept as NFKC
}

func TestValidName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"Ada Lovelace", true},
		{"O'Brien-Smith", true},
		{"Zoë", true},
		{"Ελένη", true},
		{"김민준", true},
		{"李 Lee", true},
		{"Ελένη Smith", false},
		{"p\u0430ypal", false},
		{"alice\u3164", false}, // Hangul fillers are letters that show as nothing
		{"ali\u115Fce", false},
		{"bob\uFFA0", false},
		{"x\u17B4", false},
		{"Ada<b>", false},
		{"", false},
		{strings.Repeat("a", maxNameLen+1), false},
	} {
		if got := validName(displayName(tt.name)) == nil; got != tt.ok {
			t.Errorf("validName(%q): got ok %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// The instructor removes a student: their runs are cancelled, their page is disconnected, their
// cookie signs nobody in, and their name is free. Only an instructor may, and not cross-site.
func TestRemoveStudent(t *testing.T) {
	_, base := startServer(t, classConfig(t))
	ada, teacher := join(t, base, "class-token", "Ada"), join(t, base, "teach", "Teacher")
	ws := ada.dial(t)
	if err := ws.WriteJSON(probeMsg("w", "wait: true")); err != nil {
		t.Fatal(err)
	}
	collectUntil(t, ws, TypeStarted)
	id := studentID(t, teacher, "Ada")
	form := url.Values{"student": {fmt.Sprint(id)}}
	if got, want := ada.post(t, "/api/class/remove", form), http.StatusForbidden; got != want {
		t.Errorf("a student removes: got %d, want %d", got, want)
	}
	req, _ := http.NewRequest("POST", base+"/api/class/remove", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := teacher.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusForbidden; got != want {
		t.Errorf("a cross-site remove: got %d, want %d", got, want)
	}
	if got, want := teacher.post(t, "/api/class/remove", form), http.StatusNoContent; got != want {
		t.Fatalf("remove: got %d, want %d", got, want)
	}
	msgs := collect(t, ws, "w", 30*time.Second)
	if last := msgs[len(msgs)-1]; last.Type != TypeCancelled || !strings.Contains(last.Message, "removed") {
		t.Errorf("Ada's run ended %+v, want cancelled saying she was removed", last)
	}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Error("Ada's websocket stayed open")
			}
			break
		}
	}
	if code, _ := ada.get(t, "/"); code != http.StatusForbidden {
		t.Errorf("Ada's cookie after removal: got %d, want 403", code)
	}
	if got, want := teacher.post(t, "/api/class/remove", form), http.StatusNotFound; got != want {
		t.Errorf("removing her again: got %d, want %d", got, want)
	}
	if got, want := teacher.post(t, "/api/class/remove", url.Values{"student": {fmt.Sprint(studentID(t, teacher, "Teacher"))}}), http.StatusForbidden; got != want {
		t.Errorf("removing an instructor: got %d, want %d", got, want)
	}
	join(t, base, "class-token", "Ada") // the name is free again
}

// A session expires SessionTTL after its student joined; the cookie says so too.
func TestSessionExpires(t *testing.T) {
	t.Parallel()
	cfg := classConfig(t)
	cfg.SessionTTL = 1500 * time.Millisecond // long enough for the first request on a loaded machine
	_, base := startServer(t, cfg)
	resp, _ := postJoin(t, clientFrom("127.0.0.1"), base, url.Values{"token": {"class-token"}, "name": {"Grace"}})
	joined := time.Now() // the session began before
	if h := resp.Header.Get("Set-Cookie"); !strings.Contains(h, "Max-Age=2") {
		t.Errorf("session cookie %q, want Max-Age=2 (the lifetime, rounded up to seconds)", h)
	}
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			session = c.Value
		}
	}
	get := func() int { // with the cookie as it was set, whatever a browser would do with it
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got, want := get(), http.StatusOK; got != want {
		t.Fatalf("a fresh session: got %d, want %d", got, want)
	}
	time.Sleep(time.Until(joined.Add(cfg.SessionTTL + 100*time.Millisecond))) // past the session's end
	if got, want := get(), http.StatusForbidden; got != want {
		t.Errorf("an expired session: got %d, want %d", got, want)
	}
}

// next sends someone who joins only to a page of this site.
func TestJoinNextStaysOnSite(t *testing.T) {
	cfg := classConfig(t)
	cfg.JoinsPerAddress = 100
	_, base := startServer(t, cfg)
	for i, tt := range []struct{ next, want string }{
		{"/lessons/p", "/lessons/p"},
		{"/%09/other.host/", "/"},
		{"//other.host/", "/"},
		{"/\\other.host/", "/"},
		{"https://other.host/", "/"},
	} {
		resp, _ := postJoin(t, clientFrom("127.0.0.1"), base, url.Values{"token": {"class-token"}, "name": {fmt.Sprint("n", i)}, "next": {tt.next}})
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || got != tt.want {
			t.Errorf("next %q: got %d to %q, want 303 to %q", tt.next, resp.StatusCode, got, tt.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/": "/", "/lessons/p": "/lessons/p", "/?lesson=a": "/?lesson=a", "/9": "/9",
		"": "/", "//evil": "/", "/\\evil": "/", "/%09/evil": "/", "/\t/evil": "/", "/a\r\nX: y": "/",
		"javascript:alert(1)": "/", "https://evil": "/", "evil": "/", "/a b": "/", "/.": "/", "/lessons\\x": "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q): got %q, want %q", next, got, want)
		}
	}
}

// Every answer forbids framing (CSP frame-ancestors and X-Frame-Options), pages and refusals alike.
func TestNoFraming(t *testing.T) {
	_, base := startServer(t, classConfig(t))
	for _, p := range []string{"/", "/join", "/class", "/healthz", "/static/app.js", "/nope", "/api/class"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q, want frame-ancestors 'none'", p, got)
		}
		if got, want := resp.Header.Get("X-Frame-Options"), "DENY"; got != want {
			t.Errorf("%s: X-Frame-Options %q, want %q", p, got, want)
		}
	}
}

// goStack is what a crashed Go program (a GPU worker, say) leaves in a message.
const goStack = "the GPU worker crashed: exit status 2; it said: panic: runtime error: index out of range [3] with length 3\n\n" +
	"goroutine 1 [running]:\nmain.compile(...)\n\t/home/build/gpu/compile.go:42 +0x1d\ncreated by main.main in goroutine 1\n"

// A run whose error carries a Go stack trace reaches its client, and the stored run, without it.
func TestStackTracesNeverReachClients(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("crash", fmt.Sprintf("fail: %q", goStack))); err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, ws, "crash", 30*time.Second)
	last := msgs[len(msgs)-1]
	if last.Type != TypeError || strings.Contains(last.Message, "goroutine") || strings.Contains(last.Message, ".go:") ||
		!strings.Contains(last.Message, "index out of range") {
		t.Errorf("the error: got %q, want its first line without the stack", last.Message)
	}
	var runs struct {
		Runs []struct {
			Message  string    `json:"message"`
			Messages []Message `json:"messages"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/api/runs")), &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("/api/runs: %+v %v", runs, err)
	}
	for _, m := range append([]Message{{Message: runs.Runs[0].Message}}, runs.Runs[0].Messages...) {
		if strings.Contains(m.Message, "goroutine") || strings.Contains(m.Message, "compile.go") {
			t.Errorf("/api/runs shows the stack: %q", m.Message)
		}
	}
}

// A note that carries a Go stack trace (a crashed GPU worker's last words in a kind's error note)
// reaches its client, and the stored run that /api/runs and replays show, without it.
func TestStackTracesNeverReachClientsInNotes(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	ws := dial(t, base)
	if err := ws.WriteJSON(probeMsg("crash", fmt.Sprintf("note: %q\nrows: 1", goStack))); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, m := range collect(t, ws, "crash", 30*time.Second) {
		if m.Note != nil && m.Note.Level == "error" {
			notes++
			if strings.Contains(m.Note.Message, "goroutine") {
				t.Errorf("the websocket shows the stack: %q", m.Note.Message)
			}
		}
	}
	if notes != 1 {
		t.Fatalf("got %d error notes, want 1", notes)
	}
	var runs struct {
		Runs []struct {
			Messages []Message `json:"messages"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/api/runs")), &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("/api/runs: %+v %v", runs, err)
	}
	for _, m := range runs.Runs[0].Messages {
		if m.Note != nil && (strings.Contains(m.Note.Message, "goroutine") || strings.Contains(m.Note.Message, "compile.go")) {
			t.Errorf("/api/runs shows the stack: %q", m.Note.Message)
		}
	}
}

func TestClientText(t *testing.T) {
	for msg, want := range map[string]string{
		"plain error":                    "plain error",
		"line 3: x\nline 4: y":           "line 3: x\nline 4: y",
		goStack:                          "the GPU worker crashed: exit status 2; it said: panic: runtime error: index out of range [3] with length 3 (the details are in the server's log)",
		"goroutine 5 [running]:\nmain()": "internal error (the details are in the server's log)",
	} {
		if got := clientText("test", msg); got != want {
			t.Errorf("clientText(%q): got %q, want %q", msg, got, want)
		}
	}
}

// A websocket outlives the HTTP server's read, write and idle timeouts; a slow request body does not
// (POST /join's body has PreAuthRequestTimeout, default 5 s, in place of ReadTimeout: shortened too).
func TestWebsocketOutlivesHTTPTimeouts(t *testing.T) {
	t.Parallel()
	cfg := probeConfig(t)
	cfg.ReadHeaderTimeout, cfg.ReadTimeout, cfg.WriteTimeout, cfg.IdleTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	cfg.PreAuthRequestTimeout = cfg.ReadTimeout
	_, base := startServer(t, cfg)
	ws := dial(t, base)
	time.Sleep(5 * cfg.ReadTimeout)
	if err := ws.WriteJSON(probeMsg("late", "rows: 2")); err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, ws, "late", 30*time.Second); msgs[len(msgs)-1].Type != TypeDone {
		t.Errorf("a run on a websocket older than the timeouts: %+v", msgs[len(msgs)-1])
	}
	c := slowBody(t, base, "127.0.0.1")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("a slow request body held its connection past ReadTimeout")
	}
}

// slowBody opens a connection from ip that sends a join form's header and a few bytes of a body
// it says is 100 kB, and no more.
func slowBody(t *testing.T, base, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /join HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ntoken=", strings.TrimPrefix(base, "http://"))
	return c
}

// 1,100 idle connections (from 11 addresses), half-sent headers and slow bodies (64 from each of 9
// addresses, a classroom behind each: more than all the connections not signed in may be) leave
// /healthz and /join answering, a flooded address joins once its slow bodies have stalled past
// PreAuthRequestTimeout, and the connections not signed in stay within their caps.
func TestAbuseIdleAndSlowConnections(t *testing.T) {
	idle, slowAddrs := 1100, 9
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 4500 {
		idle = max(100, int(lim.Cur)/3-slowAddrs*64) // both ends are in this process
	}
	cfg := classConfig(t)
	cfg.PreAuthRequestTimeout = 500 * time.Millisecond
	// net/http's own header timeout longer than stillOpen's 10 s: the attack's connections the
	// server holds past its cap must be closed by the cap, not by that timeout.
	cfg.ReadHeaderTimeout = time.Minute
	s, base := startServer(t, cfg)
	host := strings.TrimPrefix(base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range idle {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(10+i%11))}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", host)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		if i%10 == 0 { // a slowloris: half a header
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n", host)
		}
		conns = append(conns, c)
	}
	for range 40 {
		conns = append(conns, slowBody(t, base, "127.0.2.1"))
	}
	for a := range slowAddrs {
		for range s.cfg.MaxPreAuthPerAddress {
			conns = append(conns, slowBody(t, base, fmt.Sprintf("127.0.3.%d", a+1)))
		}
	}
	stop := healthWatch(t, base)
	for i := range 3 {
		if got, want := joinStatus(t, base, "127.0.0.1", "class-token", fmt.Sprint("Ada", i)), http.StatusSeeOther; got != want {
			t.Errorf("join during the attack: got %d, want %d", got, want)
		}
	}
	time.Sleep(2 * cfg.PreAuthRequestTimeout) // the slow bodies stall past the limit
	for a := range slowAddrs {
		if got, want := joinStatus(t, base, fmt.Sprintf("127.0.3.%d", a+1), "class-token", fmt.Sprint("Bea", a)), http.StatusSeeOther; got != want {
			t.Errorf("a join from an address of slow bodies: got %d, want %d", got, want)
		}
	}
	stop()
	open, pre := s.connLimits.counts()
	if pre > s.cfg.MaxPreAuthConns || open > s.cfg.MaxOpenConns {
		t.Errorf("connections: %d open, %d not signed in; want at most %d and %d", open, pre, s.cfg.MaxOpenConns, s.cfg.MaxPreAuthConns)
	}
	if want := s.cfg.MaxPreAuthConns; stillOpen(conns, want) > want {
		t.Errorf("the server holds %d of the attack's connections, want at most %d", stillOpen(conns, 0), want)
	}
}

// stillOpen counts the connections the server has not closed (those whose read has not ended),
// once at most want are left open, or 10 s after the call (a server that closes them slowly, on a
// loaded machine, still has them counted closed; one that keeps too many costs the 10 s).
func stillOpen(conns []net.Conn, want int) int {
	deadline := time.Now().Add(10 * time.Second)
	closed := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			var err error
			for err == nil { // a 400 or 408 answer, then the close
				_, err = c.Read(make([]byte, 512))
			}
			ne, ok := err.(net.Error)
			closed <- !(ok && ne.Timeout())
		}()
	}
	open := len(conns)
	for range conns {
		if <-closed {
			open--
		}
		if open <= want {
			break
		}
	}
	return open
}

// At a cap, the oldest connection between requests, or not signed in and stalled in a request
// past the limit, makes room; when every one is in a request begun within the limit, the new one
// is refused.
func TestConnLimitsEvictOldestIdle(t *testing.T) {
	l := newConnLimits(10, 10, 2, 16, time.Minute)
	start := time.Now()
	n := 0
	conn := func() (*limitedConn, net.Conn) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		n++
		return &limitedConn{Conn: a, l: l, addr: "10.0.0.1", accepted: start.Add(time.Duration(n) * time.Second)}, b
	}
	first, firstPeer := conn()
	second, _ := conn()
	if !l.admit(first) || !l.admit(second) {
		t.Fatal("two connections under the cap refused")
	}
	third, _ := conn()
	if !l.admit(third) {
		t.Fatal("a third connection refused while idle ones could make room")
	}
	_ = firstPeer.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := firstPeer.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("writing to the oldest idle connection: got %v, want it closed", err)
	}
	second.setState(http.StateActive, time.Now())
	third.setState(http.StateActive, time.Now())
	fourth, _ := conn()
	if l.admit(fourth) {
		t.Error("a connection admitted past the cap with every one in a request")
	}
	third.signIn(0)
	if !l.admit(fourth) {
		t.Error("a signed-in connection still counted against the cap")
	}
	if open, pre := l.counts(); open != 3 || pre != 2 {
		t.Errorf("counts: got %d open, %d not signed in; want 3 and 2", open, pre)
	}
	fourth.setState(http.StateActive, time.Now())
	second.setState(http.StateActive, time.Now().Add(-2*time.Minute)) // a body trickling in
	fifth, _ := conn()
	if !l.admit(fifth) {
		t.Error("a connection refused while one not signed in had stalled in its request past the limit")
	}
	if open, pre := l.counts(); open != 3 || pre != 2 {
		t.Errorf("counts after the stalled one made room: got %d open, %d not signed in; want 3 and 2", open, pre)
	}
}

// At the cap of all connections, an idle signed-in one makes room; a student at their cap of HTTP
// connections has their oldest idle one closed, and with all in a request is refused.
func TestConnLimitsSignedInBounded(t *testing.T) {
	l := newConnLimits(3, 10, 10, 2, time.Minute)
	var conns []*limitedConn
	for i := range 3 {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		c := &limitedConn{Conn: a, l: l, addr: "10.0.0.1", accepted: time.Now().Add(time.Duration(i) * time.Second)}
		if !l.admit(c) {
			t.Fatalf("connection %d refused under the cap", i)
		}
		c.setState(http.StateActive, time.Now())
		conns = append(conns, c)
	}
	for i, c := range conns[:2] {
		if !c.signIn(7) {
			t.Fatalf("connection %d of student 7 refused under their cap", i)
		}
	}
	if conns[2].signIn(7) {
		t.Error("a third connection of student 7 signed in with their 2 in a request")
	}
	conns[0].setState(http.StateIdle, time.Now())
	if !conns[2].signIn(7) {
		t.Error("a third connection of student 7 refused while their oldest was idle")
	}
	if open, _ := l.counts(); open != 2 {
		t.Errorf("open connections after the student's idle one was closed: got %d, want 2", open)
	}
	fourth := &limitedConn{Conn: conns[0].Conn, l: l, addr: "10.0.0.2", accepted: time.Now()}
	if !l.admit(fourth) {
		t.Fatal("a connection refused under the cap")
	}
	conns[1].setState(http.StateIdle, time.Now())
	fifth := &limitedConn{Conn: conns[0].Conn, l: l, addr: "10.0.0.2", accepted: time.Now()}
	if !l.admit(fifth) {
		t.Error("a connection refused at the cap of all while a signed-in one was idle")
	}
	if open, _ := l.counts(); open != 3 {
		t.Errorf("open connections: got %d, want 3", open)
	}
}

// One signed-in student's idle keep-alive connections (150 requests with one cookie, each on its
// own connection) cannot take the server: with the default cap per student only that many stay
// open, and with none, the server's cap closes idle ones; every request is answered, and /healthz
// and /join still answer another address.
func TestAbuseSignedInConnectionsBounded(t *testing.T) {
	t.Parallel()
	for _, perStudent := range []int{0, 1000} {
		cfg := classConfig(t)
		cfg.MaxOpenConns, cfg.MaxPreAuthConns, cfg.MaxHTTPConnsPerStudent = 100, 50, perStudent
		s, base := startServer(t, cfg)
		host := strings.TrimPrefix(base, "http://")
		ada := join(t, base, "class-token", fmt.Sprint("Ada", perStudent))
		u, _ := url.Parse(base)
		cookie := ada.client.Jar.Cookies(u)[0].String()
		var conns []net.Conn
		for i := range 150 {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.12")}, Timeout: 10 * time.Second}
			c, err := d.Dial("tcp", host)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			defer c.Close()
			conns = append(conns, c)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n\r\n", host, cookie)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			resp.Body.Close()
			if got, want := resp.StatusCode, http.StatusOK; got != want {
				t.Fatalf("request %d: got %d, want %d", i, got, want)
			}
		}
		if resp, err := clientFrom("127.0.0.1").Get(base + "/healthz"); err != nil {
			t.Errorf("/healthz from another address: %v", err)
		} else {
			resp.Body.Close()
		}
		if got, want := joinStatus(t, base, "127.0.0.13", "class-token", fmt.Sprint("Bob", perStudent)), http.StatusSeeOther; got != want {
			t.Errorf("a join from another address: got %d, want %d", got, want)
		}
		want := s.cfg.MaxOpenConns
		if perStudent == 0 {
			want = s.cfg.MaxHTTPConnsPerStudent
		}
		if got := stillOpen(conns, want); got > want {
			t.Errorf("per-student cap %d: the server holds %d of the student's connections, want at most %d", perStudent, got, want)
		}
	}
}

// A session looked up while its student is removed (the lookup read the database before the
// removal, and caches the student after classRemove forgot the cache) signs nobody in.
func TestRemovedSessionNotCachedBack(t *testing.T) {
	s, base := startServer(t, classConfig(t))
	ada, teacher := join(t, base, "class-token", "Ada"), join(t, base, "teach", "Teacher")
	if code, _ := ada.get(t, "/"); code != http.StatusOK {
		t.Fatalf("Ada's page: got %d", code)
	}
	id := studentID(t, teacher, "Ada")
	s.sess.mu.Lock()
	cached := map[string]store.Student{}
	for tok, st := range s.sess.m {
		if st.ID == id {
			cached[tok] = st
		}
	}
	s.sess.mu.Unlock()
	if len(cached) == 0 {
		t.Fatal("Ada's session is not cached")
	}
	if got, want := teacher.post(t, "/api/class/remove", url.Values{"student": {fmt.Sprint(id)}}), http.StatusNoContent; got != want {
		t.Fatalf("remove: got %d, want %d", got, want)
	}
	s.sess.mu.Lock() // the in-flight lookup puts her back
	for tok, st := range cached {
		s.sess.m[tok] = st
	}
	s.sess.mu.Unlock()
	if code, _ := ada.get(t, "/"); code != http.StatusForbidden {
		t.Errorf("Ada's cookie after removal, cached again: got %d, want 403", code)
	}
}

// joinFrom signs name in with token from address ip and returns the browser.
func joinFrom(t *testing.T, base, ip, token, name string) *student {
	t.Helper()
	c := clientFrom(ip)
	if resp, _ := postJoin(t, c, base, url.Values{"token": {token}, "name": {name}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("join %s from %s: got %d, want 303", name, ip, resp.StatusCode)
	}
	return &student{name: name, base: base, client: c}
}

// classAddrs reads the instructor's /api/class: each student's address, and the address list.
func classAddrs(t *testing.T, teacher *student) (map[string]string, []classAddress) {
	t.Helper()
	code, body := teacher.get(t, "/api/class")
	var class struct {
		Students  []classStudent `json:"students"`
		Addresses []classAddress `json:"addresses"`
	}
	if err := json.Unmarshal([]byte(body), &class); code != http.StatusOK || err != nil {
		t.Fatalf("/api/class: %d %v", code, err)
	}
	addr := map[string]string{}
	for _, s := range class.Students {
		addr[s.Name] = s.Address
	}
	return addr, class.Addresses
}

// The instructor sees the address each student joined from and how many joined from each (most
// first); blocking an address removes its students in one request (not the instructor) and refuses
// new ones from it, not from elsewhere, until it is unblocked. Students see no addresses.
func TestInstructorBlocksAnAddress(t *testing.T) {
	_, base := startServer(t, classConfig(t))
	var bots []*student
	for i := range 3 {
		bots = append(bots, joinFrom(t, base, "127.0.0.21", "class-token", fmt.Sprint("bot", i)))
	}
	ada := joinFrom(t, base, "127.0.0.22", "class-token", "Ada")
	teacher := joinFrom(t, base, "127.0.0.21", "teach", "Teacher")
	addr, list := classAddrs(t, teacher)
	if addr["bot0"] != "127.0.0.21" || addr["Ada"] != "127.0.0.22" {
		t.Errorf("students' addresses: got %v", addr)
	}
	want := []classAddress{{Address: "127.0.0.21", Students: 3}, {Address: "127.0.0.22", Students: 1}}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Errorf("addresses: got %v, want %v", list, want)
	}
	if code, body := ada.get(t, "/api/class"); code != http.StatusForbidden || strings.Contains(body, "127.0.0.") {
		t.Errorf("a student asks for /api/class: got %d %q, want 403 without addresses", code, body)
	}
	block := func(a string, on bool) (int, string) {
		t.Helper()
		resp, err := teacher.client.PostForm(base+"/api/class/block", url.Values{"address": {a}, "blocked": {fmt.Sprint(on)}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if got, want := ada.post(t, "/api/class/block", url.Values{"address": {"127.0.0.21"}, "blocked": {"true"}}), http.StatusForbidden; got != want {
		t.Errorf("a student blocks: got %d, want %d", got, want)
	}
	if code, body := block("127.0.0.21", true); code != http.StatusOK || !strings.Contains(body, `"removed":3`) {
		t.Fatalf("block: got %d %s, want 200 with removed 3", code, body)
	}
	for _, b := range bots {
		if code, _ := b.get(t, "/"); code != http.StatusForbidden {
			t.Errorf("%s after their address was blocked: got %d, want 403", b.name, code)
		}
	}
	for _, st := range []*student{ada, teacher} {
		if code, _ := st.get(t, "/"); code != http.StatusOK {
			t.Errorf("%s after another address was blocked: got %d, want 200", st.name, code)
		}
	}
	resp, body := postJoin(t, clientFrom("127.0.0.21"), base, url.Values{"token": {"class-token"}, "name": {"bot9"}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "blocked") {
		t.Errorf("a join from the blocked address: got %d, want 403 saying it is blocked", resp.StatusCode)
	}
	joinFrom(t, base, "127.0.0.21", "teach", "Teacher2")
	joinFrom(t, base, "127.0.0.23", "class-token", "Bob")
	if _, list := classAddrs(t, teacher); len(list) == 0 || list[len(list)-1] != (classAddress{Address: "127.0.0.21", Blocked: true}) {
		t.Errorf("addresses after the block: got %v, want 127.0.0.21 blocked with no students, last", list)
	}
	if code, _ := block("127.0.0.21", false); code != http.StatusOK {
		t.Fatalf("unblock: got %d", code)
	}
	joinFrom(t, base, "127.0.0.21", "class-token", "bot0")
}

// /class lists no local user, "(this computer)": without sign-in it is the one user, not a
// student; with sign-in it is nobody.
func TestClassListsNoLocalUser(t *testing.T) {
	_, base := startServer(t, probeConfig(t))
	resp, err := http.Get(base + "/api/class")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var class struct {
		Students []classStudent `json:"students"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&class); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/api/class: %d %v", resp.StatusCode, err)
	}
	if len(class.Students) != 0 {
		t.Errorf("students without sign-in: got %+v, want none", class.Students)
	}
	_, base = startServer(t, classConfig(t))
	teacher := join(t, base, "teach", "Teacher")
	if _, body := teacher.get(t, "/api/class"); strings.Contains(body, localName) || !strings.Contains(body, "Teacher") {
		t.Errorf("/api/class with sign-in: %s, want the instructor and no %s", body, localName)
	}
}

// A token the operator gives shorter than minTokenLen is warned of at start (the right token is
// never refused, so it could be guessed); a generated one is not.
func TestWeakTokensWarned(t *testing.T) {
	if got := weakTokens("", ""); got != "" {
		t.Errorf("no tokens: %q", got)
	}
	if got := weakTokens(newToken(), newToken()); got != "" {
		t.Errorf("generated tokens: %q, want no warning", got)
	}
	got := weakTokens("gpu2026", "teach")
	if !strings.Contains(got, "class token has 7 characters") || !strings.Contains(got, "instructor token has 5 characters") || strings.Count(got, "\n") != 2 {
		t.Errorf("short tokens: %q, want a warning line for each", got)
	}
}
