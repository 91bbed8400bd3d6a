package machineid_etcd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ringflake/ringflake"
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
		{"empty prefix", []machineid.Option{machineid_etcd.WithPrefix("")}, `prefix = ""; valid: any non-empty string`},
		{"TTL under 1s", []machineid.Option{machineid.WithTTL(500 * time.Millisecond)}, "TTL = 500ms; valid: 1s..1h0m0s"},
		{"TTL not whole seconds", []machineid.Option{machineid.WithTTL(1500 * time.Millisecond)}, "TTL = 1.5s; valid: a whole number of 1s"},
		{"TTL over 1h", []machineid.Option{machineid.WithTTL(2 * time.Hour)}, "TTL = 2h0m0s; valid: 1s..1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := machineid_etcd.New(c, tc.opts...)
			assert.Nil(t, h, "Holder")
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, "machineid_etcd: "+tc.want)
		})
	}
	t.Run("nil client", func(t *testing.T) {
		_, err := machineid_etcd.New(nil)
		assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
		assert.ErrorContains(t, err, "client = nil")
	})
	t.Run("zero means the default", func(t *testing.T) {
		h, err := machineid_etcd.New(c, nil, machineid.WithTTL(0), machineid.WithSafetyMargin(0), machineid.WithCallTimeout(0), machineid.WithClock(nil))
		assert.NoError(t, err)
		assert.NotNil(t, h)
	})
}
