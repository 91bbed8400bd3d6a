package machineid_k8s_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// ttl is the lease TTL of most tests: two Lease seconds, so that a
// contender waits 2.4s to take an abandoned ID over.
const ttl = 2 * time.Second

// client is a clientset of its own, whose requests fail once cut is set,
// as a pod's would when its network is cut.
type client struct {
	*kubernetes.Clientset
	cut atomic.Bool
}

// errCut is every request's error once a client is cut.
var errCut = errors.New("test: the client's network is cut")

type cuttable struct {
	next http.RoundTripper
	c    *client
}

func (t cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.c.cut.Load() {
		return nil, errCut
	}
	return t.next.RoundTrip(r)
}

// restConfig returns the configuration of a client of s with token, with
// no client-side rate limit: the tests make many holders.
func restConfig(s *k8stest.Server, token string) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CA},
		QPS:             1000,
		Burst:           1000,
	}
}

// newClient returns a client of s with token.
func newClient(t testing.TB, s *k8stest.Server, token string) *client {
	t.Helper()
	c := &client{}
	cfg := restConfig(s, token)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cuttable{rt, c} }
	var err error
	c.Clientset, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err, "kubernetes.NewForConfig")
	return c
}

// newHolder returns a Holder on c in namespace ns with the test's TTL and
// opts, released when the test ends.
func newHolder(t testing.TB, c *client, ns string, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	opts = append([]machineid.Option{machineid.WithTTL(ttl), machineid_k8s.WithNamespace(ns)}, opts...)
	l, err := machineid_k8s.New(c.CoordinationV1(), opts...)
	require.NoError(t, err, "New")
	t.Cleanup(func() { _ = l.Release(time.Time{}) })
	return l
}

// machineID calls MachineID with a 5s deadline.
func machineID(l *machineid.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.MachineID(ctx)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
