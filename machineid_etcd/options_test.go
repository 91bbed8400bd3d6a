package machineid_etcd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// TestBadConfigRefused checks that New refuses each option out of range
// with an error wrapping ringflake.ErrInvalidConfig that names the value.
func TestBadConfigRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, []string{blackhole(t)})
	for _, tc := range []struct {
		name string
		opts []machineid_etcd.Option
		want string
	}{
		{"empty prefix", []machineid_etcd.Option{machineid_etcd.WithPrefix("")}, `prefix = ""`},
		{"negative lo", []machineid_etcd.Option{machineid_etcd.WithRange(-1, 3)}, "range = -1..3"},
		{"lo above hi", []machineid_etcd.Option{machineid_etcd.WithRange(4, 3)}, "range = 4..3"},
		{"TTL under 1s", []machineid_etcd.Option{machineid_etcd.WithTTL(500 * time.Millisecond)}, "TTL = 500ms"},
		{"TTL not whole seconds", []machineid_etcd.Option{machineid_etcd.WithTTL(1500 * time.Millisecond)}, "TTL = 1.5s"},
		{"TTL over 1h", []machineid_etcd.Option{machineid_etcd.WithTTL(2 * time.Hour)}, "TTL = 2h0m0s"},
		{"negative margin", []machineid_etcd.Option{machineid_etcd.WithSafetyMargin(-time.Millisecond)}, "safety margin = -1ms"},
		{"margin TTL/2", []machineid_etcd.Option{machineid_etcd.WithTTL(2 * time.Second), machineid_etcd.WithSafetyMargin(time.Second)}, "safety margin = 1s"},
		{"call timeout under 1ms", []machineid_etcd.Option{machineid_etcd.WithCallTimeout(time.Microsecond)}, "call timeout = 1µs"},
		{"call timeout over TTL", []machineid_etcd.Option{machineid_etcd.WithCallTimeout(11 * time.Second)}, "call timeout = 11s"},
		{"nil clock", []machineid_etcd.Option{machineid_etcd.WithClock(nil)}, "clock = nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := machineid_etcd.New(c, tc.opts...)
			assert.Nil(t, l, "Leaser")
			assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "valid:")
		})
	}
	t.Run("nil client", func(t *testing.T) {
		_, err := machineid_etcd.New(nil)
		assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
	})
	t.Run("defaults and nil options", func(t *testing.T) {
		l, err := machineid_etcd.New(c, nil, machineid_etcd.WithTTL(time.Hour), machineid_etcd.WithSafetyMargin(0))
		assert.NoError(t, err)
		assert.NotNil(t, l)
	})
}
