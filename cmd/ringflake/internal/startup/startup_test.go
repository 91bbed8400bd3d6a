package startup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n        int
		r        float64
		min, max time.Duration // the bounds of this retry's wait
	}{
		{0, 0, 250 * time.Millisecond, 250 * time.Millisecond},
		{0, 0.999999, 250 * time.Millisecond, 500 * time.Millisecond},
		{1, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{2, 0.5, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{4, 0, 4 * time.Second, 4 * time.Second},
		{5, 0, 5 * time.Second, 5 * time.Second}, // 16s, capped at RetryMax
		{5, 0.999999, 5 * time.Second, 10 * time.Second},
		{8, 0.999999, 5 * time.Second, 10 * time.Second},
		{64, 0, 5 * time.Second, 5 * time.Second}, // no overflow however long it retries
		{1 << 30, 0.999999, 5 * time.Second, 10 * time.Second},
	} {
		t.Run(fmt.Sprintf("n=%d,r=%v", tt.n, tt.r), func(t *testing.T) {
			t.Parallel()
			got := Backoff(tt.n, tt.r)
			assert.True(t, tt.min <= got && got <= tt.max, "Backoff(%d, %v) = %v; want %v..%v", tt.n, tt.r, got, tt.min, tt.max)
		})
	}
}

// TestRetry runs Retry over tries that fail, in fake time: a store that
// cannot be reached is asked again with backoff, a refused clock every
// ClockRetry, a final error and success end it at once, and a signal while
// it waits ends it with ErrInterrupted. Each failure is logged once, and
// Status says the latest, with no machine ID.
func TestRetry(t *testing.T) {
	t.Parallel()
	down := errors.New("serve: lease redis://x: getting the machine ID: dial tcp: connection refused")
	clock := fmt.Errorf("serve: lease redis://x: %w: 30s ahead", machineid.ErrClockOffset)
	bad := errors.New("usage: a bad setting")
	final := func(err error) bool { return err == bad }
	for _, tt := range []struct {
		name     string
		errs     []error       // what the tries return, in turn; then success
		stop     bool          // a signal while the last failure waits
		want     error         // Retry's error
		tries    int           // how many tries Retry makes
		minTook  time.Duration // at least this long, in fake time
		maxTook  time.Duration // at most
		logged   int           // records logged
		readyzRe string        // Status's reason after the first failure
	}{
		{"succeeds at once", nil, false, nil, 1, 0, 0, 0, ""},
		{"a store down, three times", []error{down, down, down}, false, nil, 4,
			(250 + 500 + 1000) * time.Millisecond, (500 + 1000 + 2000) * time.Millisecond, 1,
			"no machine ID yet: " + down.Error() + "; serve asks again, backing off up to every 10s"},
		{"a refused clock, twice", []error{clock, clock}, false, nil, 3, 2 * ClockRetry, 2 * ClockRetry, 1,
			"refused: " + clock.Error() + "; serve asks again every 5s"},
		{"words that change are logged again", []error{down, clock, down}, false, nil, 4, 0, time.Minute, 3, ""},
		{"a bad setting ends it", []error{down, bad}, false, bad, 2, 0, time.Second, 1, ""},
		{"a signal while it waits", []error{down, down}, true, ErrInterrupted, 2, 0, 2 * time.Second, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				st := New(ctx, "lease redis://x")
				var logs bytes.Buffer
				log := slog.New(slog.NewTextHandler(&logs, nil))
				tries := 0
				var firstReason string
				began := time.Now()
				v, err := Retry(st, log, func() (int, error) {
					tries++
					if tries == 2 {
						firstReason, _, _ = st.Status()
					}
					if tries <= len(tt.errs) {
						if tt.stop && tries == len(tt.errs) {
							stop() // the signal comes; Retry then waits to ask again
						}
						return 0, tt.errs[tries-1]
					}
					return 7, nil
				}, final)
				took := time.Since(began)
				assert.Equal(t, tt.want, err)
				if tt.want == nil {
					assert.Equal(t, 7, v)
				}
				assert.Equal(t, tt.tries, tries, "tries")
				assert.True(t, tt.minTook <= took && took <= tt.maxTook, "took %v; want %v..%v", took, tt.minTook, tt.maxTook)
				assert.Equal(t, tt.logged, strings.Count(logs.String(), "level=ERROR"), "records: %s", logs.String())
				if tt.readyzRe != "" {
					assert.Equal(t, tt.readyzRe, firstReason, "Status while it waits to ask again")
				}
				reason, machine, _ := st.Status()
				assert.Equal(t, int64(-1), machine)
				assert.False(t, strings.HasPrefix(reason, "no machine ID yet") || strings.HasPrefix(reason, "refused"),
					"Retry clears its failure when it returns: %q", reason)
			})
		})
	}
}

// TestStatusMachine checks that Status gives the machine ID the lease
// reports, taken or being acquired, and -1 before there is one.
func TestStatusMachine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		lease   *machineid.Lease
		machine int64
		reason  string
	}{
		{"no report yet", nil, -1, "acquiring the machine ID from the lease redis://x"},
		{"no ID yet", &machineid.Lease{ID: -1}, -1, "acquiring the machine ID from the lease redis://x"},
		{"not held", &machineid.Lease{ID: 4}, 4, "acquiring the machine ID from the lease redis://x: machine ID 4 is not held"},
		{"held", &machineid.Lease{ID: 0, Held: true}, 0, "starting with machine ID 0 from the lease redis://x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := New(context.Background(), "lease redis://x")
			if tt.lease != nil {
				st.Lease.Store(tt.lease)
			}
			reason, machine, wait := st.Status()
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.machine, machine)
			assert.Zero(t, wait)
		})
	}
	require.NotNil(t, New(context.Background(), "x"))
}
