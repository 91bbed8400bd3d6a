package machineid_etcd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// TestBadConfigRefused checks that New refuses what etcd cannot do, and
// the store's own options out of range, with an error wrapping
// ringflake.ErrInvalidConfig that names the value and what is valid.
func TestBadConfigRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, []string{blackhole(t)})
	for _, tc := range []struct {
		name string
		opts []machineid.Option
		want string
	}{
		{"TTL under 1s", []machineid.Option{machineid.WithTTL(500 * time.Millisecond)}, "TTL = 500ms; valid: 1s..1h0m0s"},
		{"TTL not whole seconds", []machineid.Option{machineid.WithTTL(1500 * time.Millisecond)}, "TTL = 1.5s; valid: a whole number of 1s"},
		{"TTL over 1h", []machineid.Option{machineid.WithTTL(2 * time.Hour)}, "TTL = 2h0m0s; valid: 1s..1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := machineid_etcd.New(c, tc.opts...)
			assert.Nil(t, h, "Holder")
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, "ringflake: invalid configuration: "+tc.want, "the sentinel names the package, once")
		})
	}
	t.Run("nil client", func(t *testing.T) {
		_, err := machineid_etcd.New(nil)
		assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
		assert.ErrorContains(t, err, "client = nil")
	})
	t.Run("zero means the default", func(t *testing.T) {
		h, err := machineid_etcd.New(c, nil, machineid.WithTTL(0), machineid.WithSafetyMargin(0), machineid.WithCallTimeout(0), machineid_etcd.WithPrefix(""))
		assert.NoError(t, err)
		assert.NotNil(t, h)
	})
}

// TestWithPrefix checks that a Holder writes its keys under its prefix
// only, and that holders under different prefixes share no IDs.
func TestWithPrefix(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	c := newClient(t, e.Endpoints())
	rng := machineid.WithRange(0, 0)
	a := newHolder(t, c, rng, machineid_etcd.WithPrefix("a/"))
	b := newHolder(t, c, rng, machineid_etcd.WithPrefix("b/"))
	require.Equal(t, int64(0), acquire(t, a))
	require.Equal(t, int64(0), acquire(t, b), "b's ID; want 0, which a holds under another prefix")
	assert.Empty(t, owner(t, c, 0), "owner of 0 under the default prefix")
	assert.False(t, readMark(t, c, "a/", 0).IsZero(), "a's mark under a/")
}
