package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certificate serves a TLS certificate from files, loaded again when they change: a renewed
// certificate (a new file put in place) is served without a restart, checked at most once a
// minute (certCheckEvery).
type certificate struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// tlsConfig loads the key pair and returns the TLS configuration that serves it; an error
// when the files cannot be read or do not match.
func tlsConfig(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}, nil
}

func (c *certificate) load() error {
	info, err := os.Stat(c.certFile)
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("-tls-cert %s, -tls-key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.modTime = &cert, info.ModTime()
	return nil
}

var certCheckEvery = time.Minute

func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) >= certCheckEvery {
		c.checked = time.Now()
		if info, err := os.Stat(c.certFile); err == nil && !info.ModTime().Equal(c.modTime) {
			if err := c.load(); err != nil {
				// Keep serving the one that works; say why the new one does not.
				c.log.Error("the TLS certificate changed but cannot be loaded; serving the previous one", "err", err)
			} else {
				c.log.Info("TLS certificate reloaded", "cert", c.certFile)
			}
		}
	}
	return c.cert, nil
}
