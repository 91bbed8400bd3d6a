package machineid_k8s_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// TestBadConfigRefused checks that New refuses what the API server would,
// and the store's bounds, before any call, naming the value.
func TestBadConfigRefused(t *testing.T) {
	t.Parallel()
	// New never calls the server, so none listens here.
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	c := cs.CoordinationV1()
	for _, tt := range []struct {
		name string
		opt  machineid.Option
		want string
	}{
		{"namespace with capitals", machineid_k8s.WithNamespace("Ring"), `namespace = "Ring"`},
		{"prefix with an underscore", machineid_k8s.WithPrefix("ids_"), `prefix = "ids_"`},
		{"TTL under a second", machineid.WithTTL(500 * time.Millisecond), "TTL = 500ms; valid: 1s..1h0m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := machineid_k8s.New(c, tt.opt)
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err = machineid_k8s.New(nil)
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "a nil client")
	h, err := machineid_k8s.New(c, machineid_k8s.WithNamespace(""), machineid_k8s.WithPrefix(""), machineid_k8s.WithIdentity(""))
	assert.NoError(t, err, "an empty namespace, prefix or identity means the default")
	assert.NotNil(t, h)
}
