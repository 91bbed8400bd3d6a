package serve

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
)

// TLSFlags are serve's TLS flags: a certificate and key that both the HTTP
// and the gRPC port present, and a CA whose certificates a client must
// present (mutual TLS). With none given, both ports are plaintext.
type TLSFlags struct {
	Cert, Key, ClientCA string
}

// Register adds the flags to fs.
func (f *TLSFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Cert, "tls-cert", "", "serve HTTP and gRPC over TLS with the certificate (chain) in the PEM `FILE`; with --tls-key")
	fs.StringVar(&f.Key, "tls-key", "", "the private key of --tls-cert, a PEM `FILE`")
	fs.StringVar(&f.ClientCA, "tls-client-ca", "", "require of every client a certificate signed by a CA in the PEM `FILE` (mutual TLS); with --tls-cert")
}

// Config returns the TLS configuration the flags give, or nil for
// plaintext. It loads the files, and fails with an error that names the
// flag and the file at fault.
func (f TLSFlags) Config() (*tls.Config, error) {
	switch {
	case f.Cert == "" && f.Key == "" && f.ClientCA == "":
		return nil, nil
	case f.Cert == "" && f.Key == "":
		return nil, fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key, the server's own certificate")
	case f.Cert == "" || f.Key == "":
		return nil, fmt.Errorf("give --tls-cert and --tls-key together (--tls-cert %q, --tls-key %q)", f.Cert, f.Key)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s with --tls-key %s: %w", f.Cert, f.Key, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.ClientCA == "" {
		return c, nil
	}
	pem, err := os.ReadFile(f.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-client-ca: %w", err)
	}
	c.ClientCAs = x509.NewCertPool()
	if !c.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-client-ca %s holds no PEM certificate", f.ClientCA)
	}
	c.ClientAuth = tls.RequireAndVerifyClientCert
	return c, nil
}

// Listener returns ln as the HTTP server reads it: its connections over
// TLS when c is not nil, and with net/http's own error answers in JSON
// (JSONErrors), which rewrites the plaintext inside TLS.
func Listener(ln net.Listener, c *tls.Config) net.Listener {
	if c != nil {
		ln = tls.NewListener(ln, c)
	}
	return JSONErrors(ln)
}
