package main

import (
	"bytes"
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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 named cn and its key, and returns the
// certificate.
func selfSigned(t *testing.T, certFile, keyFile, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written beside and renamed, as a renewal puts a new certificate in place.
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(file+".new", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serve -tls-cert/-tls-key serves HTTPS, and a renewed certificate without a restart.
func TestServeTLS(t *testing.T) {
	every := certCheckEvery
	certCheckEvery = 0
	t.Cleanup(func() { certCheckEvery = every })
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := selfSigned(t, certFile, keyFile, "first")
	s := launchServe(t, t.TempDir(), nil, "-tls-cert", certFile, "-tls-key", keyFile)
	defer s.stop()
	base := strings.Replace(s.url, "http://", "https://", 1)
	if !strings.Contains(s.log.String(), `"url":"https://`) {
		t.Errorf("the log does not say https: %s", s.log.String())
	}
	client := func(c *x509.Certificate) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(c)
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	get := func(c *http.Client) (string, error) {
		resp, err := c.Get(base + "/healthz")
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName, nil
	}
	if cn, err := get(client(first)); err != nil || cn != "first" {
		t.Fatalf("over HTTPS: %q, %v", cn, err)
	}
	// Plain HTTP to the TLS port gets no API.
	if resp, err := http.Get(s.url + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served on the TLS port")
		}
	}
	time.Sleep(10 * time.Millisecond) // a later modification time
	second := selfSigned(t, certFile, keyFile, "second")
	if cn, err := get(client(second)); err != nil || cn != "second" {
		t.Fatalf("after renewal: %q, %v", cn, err)
	}
}

func TestServeRefusesBadTLSFlags(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	selfSigned(t, certFile, keyFile, "a")
	other := filepath.Join(dir, "other.pem")
	selfSigned(t, filepath.Join(dir, "other-cert.pem"), other, "b")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", certFile}, "give -tls-cert and -tls-key together"},
		{[]string{"-tls-cert", certFile, "-tls-key", other}, "private key does not match public key"},
		{[]string{"-tls-cert", filepath.Join(dir, "missing.pem"), "-tls-key", keyFile}, "no such file"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir()}, c.args...)
		if code := run(context.Background(), args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
