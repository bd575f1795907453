package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files and returns their paths
// and the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "playground test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
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
