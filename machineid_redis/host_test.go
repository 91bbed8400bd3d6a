package machineid_redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

func hostMapped(t *testing.T, c redis.UniversalClient, host string, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	s, err := mr.New(c, append([]machineid.Option{machineid.WithTTL(ttl), mr.WithHostMapping(host)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Release(time.Time{}) })
	return s
}

func TestHostModeReadsAndExtendsTheSeedsData(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	ctx := acquireCtx(t)
	// Data as the seed's Java service leaves it, under an untagged prefix.
	const p = "seed:"
	require.NoError(t, c.HSet(ctx, p+"IP_MACHINE_ID_MAPPING", "10.0.0.1", "1", "10.0.0.2", "2").Err())
	require.NoError(t, c.Set(ctx, p+"MAX_ID", "2", 0).Err())

	tests := []struct {
		host string
		want int64
	}{
		{"10.0.0.2", 2}, // mapped
		{"10.0.0.9", 3}, // new: MAX_ID + 1
		{"10.0.0.1", 1}, // mapped
		{"10.0.0.7", 4}, // new
	}
	for _, tt := range tests {
		id, err := hostMapped(t, c, tt.host, mr.WithPrefix(p)).MachineID(ctx)
		require.NoError(t, err, "host %s", tt.host)
		assert.Equal(t, tt.want, id, "host %s", tt.host)
	}
	assert.Equal(t, "4", c.Get(ctx, p+"MAX_ID").Val(), "MAX_ID should count the IDs handed out")
	assert.Equal(t, "3", c.HGet(ctx, p+"IP_MACHINE_ID_MAPPING", "10.0.0.9").Val(), "the mapping should be stored as the seed stores it")
}

func TestHostModeConcurrentNewHostsGetDistinctIDs(t *testing.T) {
	t.Parallel()
	c := client(t, redistest.Start(t).Addr)
	const n = 50
	svcs := make([]*machineid.Holder, n)
	for i := range svcs {
		svcs[i] = hostMapped(t, c, "10.1.0."+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	ids := make([]int64, n)
	ctx := acquireCtx(t)
	var g errgroup.Group
	for i, s := range svcs {
		g.Go(func() error {
			var err error
			ids[i], err = s.MachineID(ctx)
			return err
		})
	}
	require.NoError(t, g.Wait())
	requireDistinct(t, ids, "machine ID")
	for _, id := range ids {
		assert.True(t, id >= 1 && id <= n, "ID %d; want 1..%d: no INCR may be lost or doubled", id, n)
	}
}

func TestHostModeRefusals(t *testing.T) {
	t.Parallel()
	t.Run("second live process on the host", func(t *testing.T) {
		t.Parallel()
		c := client(t, settled(t, floor).Addr)
		ctx := acquireCtx(t)
		first := hostMapped(t, c, "10.0.0.5")
		id, err := first.MachineID(ctx)
		require.NoError(t, err)
		_, err = hostMapped(t, c, "10.0.0.5").MachineID(ctx)
		require.ErrorIs(t, err, mr.ErrHostInUse)
		assert.Contains(t, err.Error(), `host "10.0.0.5" maps to machine ID 1, leased by another process`)

		require.NoError(t, first.Release(time.Time{}))
		next := hostMapped(t, c, "10.0.0.5")
		got, err := next.MachineID(ctx)
		require.NoError(t, err, "after the first process released, the host's ID should be free")
		assert.Equal(t, id, got)
		assert.Equal(t, leaseOf(first).Until, leaseOf(next).After, "host mode should apply the mark guard too")
	})
	t.Run("range used up", func(t *testing.T) {
		t.Parallel()
		c := client(t, redistest.Start(t).Addr)
		ctx := acquireCtx(t)
		for _, h := range []string{"a", "b", "c"} {
			_, err := hostMapped(t, c, h, machineid.WithRange(1, 3)).MachineID(ctx)
			require.NoError(t, err)
		}
		_, err := hostMapped(t, c, "d", machineid.WithRange(1, 3)).MachineID(ctx)
		require.ErrorIs(t, err, machineid.ErrExhausted)
		assert.Contains(t, err.Error(), "MAX_ID = 3, the end of 1..3")
		// Not ctx: the refused take waited for it to end, and under load
		// this read came after its deadline and read nothing.
		n, err := c.Get(context.Background(), prefix+"MAX_ID").Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(3), n, "MAX_ID must never go past the range")
	})
	t.Run("mapping outside the range", func(t *testing.T) {
		t.Parallel()
		c := client(t, redistest.Start(t).Addr)
		ctx := acquireCtx(t)
		require.NoError(t, c.HSet(ctx, prefix+"IP_MACHINE_ID_MAPPING", "h", "2000").Err())
		_, err := hostMapped(t, c, "h").MachineID(ctx)
		require.ErrorIs(t, err, mr.ErrBadMapping)
		assert.Contains(t, err.Error(), `host "h" maps to 2000, outside 0..1023`)
	})
	t.Run("values that are not decimal IDs", func(t *testing.T) {
		t.Parallel()
		c := client(t, redistest.Start(t).Addr)
		ctx := acquireCtx(t)
		// Lua's tonumber reads most of these; a lease on "LEASE:5.5" would
		// not collide with "LEASE:5", and Redis would truncate 5.5 to 5.
		bad := []string{"\xac\xed\x00\x05", "5.5", "-0", "-3", "nan", "inf", " 5", "5 ", "0x5", "5e0", "+5", "", "1234567890123456"}
		for i, v := range bad {
			p := fmt.Sprintf("{bad%d}:", i)
			require.NoError(t, c.HSet(ctx, p+"IP_MACHINE_ID_MAPPING", "h", v).Err())
			id, err := hostMapped(t, c, "h", mr.WithPrefix(p)).MachineID(ctx)
			require.ErrorIs(t, err, mr.ErrBadMapping, "mapping %q gave ID %d", v, id)
			assert.Contains(t, err.Error(), `host "h" maps to a value that is not a decimal ID`)
			require.NoError(t, c.Set(ctx, p+"MAX_ID", v, 0).Err())
			id, err = hostMapped(t, c, "new", mr.WithPrefix(p)).MachineID(ctx)
			require.ErrorIs(t, err, mr.ErrBadMapping, "MAX_ID %q gave ID %d", v, id)
			assert.Contains(t, err.Error(), p+"MAX_ID holds a value that is not a decimal ID")
			keys, err := c.Keys(ctx, p+"LEASE:*").Result()
			require.NoError(t, err)
			assert.Empty(t, keys, "a refused mapping %q must take no lease", v)
		}
	})
	t.Run("leading zeros name the same ID", func(t *testing.T) {
		t.Parallel()
		c := client(t, redistest.Start(t).Addr)
		ctx := acquireCtx(t)
		require.NoError(t, c.HSet(ctx, prefix+"IP_MACHINE_ID_MAPPING", "a", "5", "b", "005").Err())
		id, err := hostMapped(t, c, "a").MachineID(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(5), id)
		_, err = hostMapped(t, c, "b").MachineID(ctx)
		require.ErrorIs(t, err, mr.ErrHostInUse, "hosts mapped to 5 and 005 hold one ID and must not both lease it")
	})
}
