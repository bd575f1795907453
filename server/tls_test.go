package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gpuplayground/playground/internal/testcert"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files (testcert.SelfSigned).
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	return testcert.SelfSigned(t)
}

// With -tls-cert and -tls-key the server speaks https and wss, and prints an https URL.
func TestRunOverTLS(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Addr: "127.0.0.1:0", Out: pw, TLSCert: certFile, TLSKey: keyFile}) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "GPU Playground: ")
	if !ok || !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("got first line %q, want an https URL", line)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tc := &tls.Config{RootCAs: pool}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := client.Get(url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz over https: %d", resp.StatusCode)
	}
	d := websocket.Dialer{TLSClientConfig: tc}
	ws, _, err := d.Dial("wss"+strings.TrimPrefix(url, "https")+"ws", nil)
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	ws.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	pw.Close()
}

func TestRunRefusesHalfATLSPair(t *testing.T) {
	t.Parallel()
	certFile, _, _ := selfSigned(t)
	for _, cfg := range []Config{{TLSCert: certFile}, {TLSCert: certFile, TLSKey: certFile}} {
		cfg.Addr, cfg.Out = "127.0.0.1:0", io.Discard
		if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "TLS") {
			t.Errorf("%+v: got %v, want an error about the TLS pair", cfg, err)
		}
	}
}

// The session cookie is Secure when the sign-in came over TLS (never sent back over plain http),
// and not otherwise (a plain-http classroom server must still work).
func TestSessionCookieSecureOverTLS(t *testing.T) {
	s, err := New(classConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Ada", "Bob"} {
		overTLS := i == 1
		r := httptest.NewRequest(http.MethodPost, "/join", strings.NewReader(url.Values{"token": {"class-token"}, "name": {name}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if overTLS {
			r.TLS = &tls.ConnectionState{}
		}
		w := httptest.NewRecorder()
		s.join(w, r)
		cs := w.Result().Cookies()
		if len(cs) != 1 || cs[0].Secure != overTLS {
			t.Errorf("over TLS %v: cookies %+v, want one with Secure %v", overTLS, cs, overTLS)
		}
	}
}
