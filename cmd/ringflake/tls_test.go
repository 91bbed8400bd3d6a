package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// testPKI is a CA made for one test, and a server certificate for
// 127.0.0.1 and a client certificate that it signed, the CA's and the
// server's as PEM files in the test's directory.
type testPKI struct {
	caFile, certFile, keyFile string
	roots                     *x509.CertPool // the CA
	client                    tls.Certificate
}

// newPKI makes a testPKI.
func newPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ringflake test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	sign := func(serial int64, name string, usage x509.ExtKeyUsage, ips ...net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return der, key
	}
	p := testPKI{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server-key.pem"),
		roots: x509.NewCertPool()}
	p.roots.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	serverDER, serverKey := sign(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, net.IPv4(127, 0, 0, 1))
	writePEM(t, p.certFile, "CERTIFICATE", serverDER)
	writePEM(t, p.keyFile, "PRIVATE KEY", marshalKey(t, serverKey))
	clientDER, clientKey := sign(3, "ringflake test client", x509.ExtKeyUsageClientAuth)
	p.client = tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return k
}

func marshalKey(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	b, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return b
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

// tlsConfig is a client's configuration that trusts the test CA, and
// presents the client certificate if withCert.
func (p testPKI) tlsConfig(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}
	if withCert {
		c.Certificates = []tls.Certificate{p.client}
	}
	return c
}

// httpsGet sends GET https://addr+path with conf and extra headers, and
// reads the answer.
func httpsGet(addr, path string, conf *tls.Config, header http.Header) (reply, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return reply{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// takeIDs takes n IDs with a ringflakeclient dialing addr over conf, and
// checks that they came from machine.
func takeIDs(t *testing.T, addr string, conf *tls.Config, n int, machine int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ringflakeclient.New(ctx, []string{addr},
		ringflakeclient.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(conf))))
	require.NoError(t, err)
	defer c.Close()
	for range n {
		id, err := c.NextID(ctx)
		require.NoError(t, err)
		assert.Equal(t, machine, ringflake.DefaultLayout().Decompose(id).Machine)
	}
}

// infoErr is the error of an Info call to addr with creds, which fails
// at once rather than wait for a connection that the handshake refuses.
func infoErr(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pb.NewIDsClient(conn).Info(ctx, &pb.InfoRequest{})
	return err
}

// With --tls-cert and --tls-key, both ports speak TLS with the
// certificate, made in the test: a client that trusts its CA gets IDs
// over HTTPS and over gRPC (ringflakeclient), net/http's own error
// answers are still JSON inside TLS, and a plaintext client gets nothing.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	s := startServer(t, "--machine-id", "4", "--grpc-addr", "127.0.0.1:0", "--tls-cert", p.certFile, "--tls-key", p.keyFile)
	conf := p.tlsConfig(false)

	r, err := httpsGet(s.addr, "/v1/id", conf, nil)
	require.NoError(t, err)
	require.Equal(t, 200, r.code, r.body)
	var one struct{ ID ringflake.ID }
	require.NoError(t, json.Unmarshal([]byte(r.body), &one), r.body)
	assert.Equal(t, int64(4), ringflake.DefaultLayout().Decompose(one.ID).Machine)
	r, err = httpsGet(s.addr, "/healthz", conf, http.Header{"X-Big": {strings.Repeat("x", 16<<10)}})
	require.NoError(t, err)
	assert.Equal(t, 431, r.code)
	assert.JSONEq(t, `{"error":"431 Request Header Fields Too Large"}`, r.body, "net/http's own answer, in JSON inside TLS")
	_, err = get(s.addr, "/v1/id")
	assert.Error(t, err, "plaintext HTTP to the TLS port")

	takeIDs(t, s.grpcAddr(t), conf, 100, 4)
	assert.Error(t, infoErr(t, s.grpcAddr(t), insecure.NewCredentials()), "plaintext gRPC to the TLS port")
	assert.Error(t, infoErr(t, s.grpcAddr(t), credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})),
		"a client that does not trust the CA")
	assert.Contains(t, s.log()[0], "tls")
	assert.Equal(t, true, s.log()[0]["tls"], "the listening record says TLS")
}

// With --tls-client-ca as well, both ports require a client certificate
// that the CA signed: a client that presents one gets IDs over HTTPS and
// gRPC, and one that does not is refused on both.
func TestServeMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	s := startServer(t, "--machine-id", "6", "--grpc-addr", "127.0.0.1:0",
		"--tls-cert", p.certFile, "--tls-key", p.keyFile, "--tls-client-ca", p.caFile)

	r, err := httpsGet(s.addr, "/v1/id", p.tlsConfig(true), nil)
	require.NoError(t, err)
	assert.Equal(t, 200, r.code, r.body)
	_, err = httpsGet(s.addr, "/v1/id", p.tlsConfig(false), nil)
	assert.Error(t, err, "HTTPS without a client certificate")

	takeIDs(t, s.grpcAddr(t), p.tlsConfig(true), 100, 6)
	assert.Error(t, infoErr(t, s.grpcAddr(t), credentials.NewTLS(p.tlsConfig(false))), "gRPC without a client certificate")
	assert.Equal(t, true, s.log()[0]["mutual_tls"], "the listening record says mutual TLS")
}
