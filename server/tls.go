package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// listen listens on cfg.Addr, admitting connections under limits (conns.go): over TLS when cfg
// names a certificate and key (scheme "https"), else plain ("http"). A missing or unreadable pair
// is an error before anything listens.
func listen(cfg Config, limits *connLimits) (net.Listener, string, error) {
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, "", errors.New("give both -tls-cert and -tls-key, or neither")
	}
	var tc *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("loading the TLS certificate and key: %w", err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	raw := cfg.Listener
	if raw == nil {
		var err error
		if raw, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, "", err
		}
	}
	ln := net.Listener(&limitListener{Listener: raw, l: limits})
	if tc == nil {
		return ln, "http", nil
	}
	return tls.NewListener(ln, tc), "https", nil
}
