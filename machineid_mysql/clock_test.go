package machineid_mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// TestClockOffIsRefused has a fleet hold machine ID 0 of 0..7, and then
// newcomers whose clocks are 30s ahead and 30s behind the database's ask
// for an ID. Each is refused at once, with an error that names the
// database's clock and says which way the clock is off and by how much,
// and leaves ID 1's row free and unmarked. A newcomer with the right clock
// then takes ID 1 and issues at once.
func TestClockOffIsRefused(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	fleet := newLeaser(t, db, machineid.WithRange(0, 7))
	g, err := ringflake.New(ctxT(t), ringflake.WithMachineIDSource(fleet))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	require.Equal(t, int64(0), g.Lease().ID)
	for _, tt := range []struct {
		name string
		off  time.Duration
		way  string
	}{
		{"ahead", 30 * time.Second, "ahead of"},
		{"behind", -30 * time.Second, "behind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLeaser(t, db, machineid.WithRange(0, 7))
			clock := func() time.Time { return time.Now().Add(tt.off) }
			_, err := ringflake.New(ctxT(t), ringflake.WithMachineIDSource(l), ringflake.WithClock(clock))
			require.ErrorIs(t, err, machineid.ErrClockOffset)
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "the refusal comes at once, not at the deadline")
			var ce *machineid.ClockOffsetError
			require.ErrorAs(t, err, &ce)
			assert.InDelta(t, tt.off, ce.By, float64(ce.Within+100*time.Millisecond), "the offset: %v", ce.ClockOffset)
			assert.Equal(t, int64(1), ce.ID, "the ID it would have taken")
			assert.ErrorContains(t, err, "machineid: the clock is off the fleet's: this process's clock is ")
			assert.ErrorContains(t, err, "s "+tt.way+" MySQL's clock (UTC_TIMESTAMP) (±")
			assert.ErrorContains(t, err, "at most 2s is allowed (machineid.WithMaxClockOffset)")
			r := readRow(t, db, 1)
			assert.Nil(t, r.owner, "the refused holder must free the row")
			assert.Nil(t, r.mark, "the refused holder must write no mark")
		})
	}
	right := newLeaser(t, db, machineid.WithRange(0, 7))
	start := time.Now()
	g2, err := ringflake.New(ctxT(t), ringflake.WithMachineIDSource(right))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g2.Close() })
	took := time.Since(start)
	l := g2.Lease()
	assert.Equal(t, int64(1), l.ID)
	assert.True(t, l.After.IsZero(), "After = %v; want none: no refused newcomer left a mark", l.After)
	assert.Equal(t, "MySQL's clock (UTC_TIMESTAMP)", l.Clock.Against)
	t.Logf("the newcomer took %v; its clock: %v", took.Round(time.Millisecond), l.Clock)
}

// TestExhaustedSaysWhoHolds fills a range: a newcomer whose deadline comes
// first fails naming the account that holds the IDs, how many it holds,
// when the first frees and how long it waited.
func TestExhaustedSaysWhoHolds(t *testing.T) {
	t.Parallel()
	db := sharedDB(t)
	for range 2 {
		_, err := newLeaser(t, db, machineid.WithRange(0, 1)).MachineID(ctxT(t))
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ttl/2)
	defer cancel()
	_, err := newLeaser(t, db, machineid.WithRange(0, 1)).MachineID(ctx)
	require.ErrorIs(t, err, machineid.ErrExhausted)
	assert.ErrorContains(t, err, "machine IDs 0..1 of ringflake_machine_ids held, each by an unexpired owner: root@127.0.0.1 (2) (the accounts they connected as, and how many IDs each; owners are random tokens); the first frees in at most ")
	assert.ErrorContains(t, err, "by the database's clock; waited ")
}
