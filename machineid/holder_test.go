package machineid_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
)

// memLimits are the bounds a memStore's Holders take.
var memLimits = machineid.Limits{Name: "memstore", MaxIDs: 1 << 16}

type memSettings struct{ prefix string }

func withPrefix(p string) machineid.Option {
	return machineid.StoreOption("memstore.WithPrefix", func(s *memSettings) { s.prefix = p })
}

// newHolder returns a Holder on a client of its own to s.
func newHolder(t *testing.T, s *memStore, opts ...machineid.Option) (*machineid.Holder, *memClient) {
	t.Helper()
	c := newMemClient(s)
	var set memSettings
	h, err := machineid.NewHolder(c, &set, memLimits, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { close(c.unstick); c.hang.Store(false); _ = h.Release(time.Time{}) })
	return h, c
}

// TestHolderConformance runs the conformance suite against Holders on the
// in-memory store, with a restart that keeps its data and one that drops
// it, and on a store that reports its clock, for the Clock subtest. Its
// TTL is 3 s: the store is in the test's process, so the only delay is the
// scheduler's, but at 1 s the safety margin (TTL/5, what a Holder leaves
// for its expiry timer and its watchers) was 200 ms, and under the CPU hog
// at load 13 on 2 cores a stall let three holders take IDs whose holders'
// watchers reported the loss 5 to 32 ms later (Exclusive).
func TestHolderConformance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		keeps, clocked bool
	}{
		{"keeps data", true, false},
		{"drops data", false, false},
		{"reports its clock", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newMemStore(tt.keeps)
			s.clocked = tt.clocked
			lim, ref := memLimits, ""
			if tt.clocked {
				lim, ref = clockedLimits, "the memstore's clock"
			}
			var mu sync.Mutex
			clients := map[machineid.Leaser]*memClient{}
			machineidtest.Run(t, machineidtest.Harness{
				NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
					c := newMemClient(s)
					var set memSettings
					h, err := machineid.NewHolder(c, &set, lim, machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
					if err != nil {
						return nil, err
					}
					mu.Lock()
					clients[h] = c
					mu.Unlock()
					t.Cleanup(func() { _ = h.Release(time.Time{}) })
					return h, nil
				},
				Abandon: func(l machineid.Leaser) {
					mu.Lock()
					defer mu.Unlock()
					clients[l].cut.Store(true)
				},
				Pause:     func(*testing.T) func() { return s.pause() },
				Restart:   func(*testing.T) { s.restart() },
				KeepsData: tt.keeps,
				TTL:       3 * time.Second,
				Reference: ref,
			})
		})
	}
}

// TestNewHolderOptions checks the meaning of zero, the bounds, a store's
// own option, and one of another store's.
func TestNewHolderOptions(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	for _, tt := range []struct {
		name string
		lim  machineid.Limits
		opts []machineid.Option
		want string // in the error; "" for none
	}{
		{"zero means the defaults", memLimits, []machineid.Option{machineid.WithTTL(0), machineid.WithSafetyMargin(0), machineid.WithCallTimeout(0), nil}, ""},
		{"TTL at the store's minimum", machineid.Limits{Name: "x", MinTTL: time.Second}, []machineid.Option{machineid.WithTTL(time.Second)}, ""},
		{"TTL below the store's minimum", machineid.Limits{Name: "x", MinTTL: time.Second}, []machineid.Option{machineid.WithTTL(999 * time.Millisecond)}, "invalid configuration: TTL = 999ms; valid: 1s..1h0m0s"},
		{"TTL above the Holder's maximum", memLimits, []machineid.Option{machineid.WithTTL(time.Hour + 1)}, "valid: 100ms..1h0m0s"},
		{"TTL off the store's step", machineid.Limits{Name: "x", TTLStep: time.Second}, []machineid.Option{machineid.WithTTL(1500 * time.Millisecond)}, "a whole number of 1s"},
		{"negative TTL", memLimits, []machineid.Option{machineid.WithTTL(-time.Second)}, "TTL = -1s"},
		{"margin of half the TTL", memLimits, []machineid.Option{machineid.WithTTL(time.Second), machineid.WithSafetyMargin(500 * time.Millisecond)}, "safety margin = 500ms"},
		{"negative margin", memLimits, []machineid.Option{machineid.WithSafetyMargin(-1)}, "safety margin = -1ns"},
		{"call timeout above TTL/3", memLimits, []machineid.Option{machineid.WithTTL(3 * time.Second), machineid.WithCallTimeout(time.Second + 1)}, "call timeout = 1.000000001s; valid: 1ms..1s (TTL/3)"},
		{"range lo above hi", memLimits, []machineid.Option{machineid.WithRange(5, 4)}, "range = 5..4"},
		{"negative lo", memLimits, []machineid.Option{machineid.WithRange(-1, 4)}, "range = -1..4"},
		{"hi past the store's maximum", machineid.Limits{Name: "x", MaxID: 99}, []machineid.Option{machineid.WithRange(0, 100)}, "0 <= lo <= hi <= 99"},
		{"range larger than the store allows", machineid.Limits{Name: "x", MaxIDs: 10}, []machineid.Option{machineid.WithRange(0, 10)}, "at most 10 IDs"},
		{"the store's own option", memLimits, []machineid.Option{withPrefix("p")}, ""},
		{"another store's option", memLimits, []machineid.Option{machineid.StoreOption("other.WithTable", func(*struct{ table string }) {})}, "option = other.WithTable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var set memSettings
			h, err := machineid.NewHolder(newMemClient(s), &set, tt.lim, tt.opts...)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, int64(-1), h.Lease().ID, "a new Holder's lease")
				return
			}
			require.ErrorIs(t, err, ringflake.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	var set memSettings
	_, err := machineid.NewHolder(newMemClient(s), &set, memLimits, withPrefix("ids:"))
	require.NoError(t, err)
	assert.Equal(t, "ids:", set.prefix, "the store's own option applied to its settings")
	_, err = machineid.NewHolder[memSettings](nil, &set, memLimits)
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "a nil store")
}

// ttlStore records the TTL of the claims a Holder makes.
type ttlStore struct {
	*memClient
	ttl atomic.Int64
}

func (s *ttlStore) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	s.ttl.Store(int64(c.TTL))
	return s.memClient.Take(ctx, c)
}

// TestHolderStoreDefaultTTL checks that a store's DefaultTTL replaces the
// Holder's 10s when no TTL is given, and that WithTTL overrides it.
func TestHolderStoreDefaultTTL(t *testing.T) {
	t.Parallel()
	short := machineid.Limits{Name: "x", DefaultTTL: 600 * time.Millisecond}
	for _, tt := range []struct {
		name string
		lim  machineid.Limits
		opts []machineid.Option
		want time.Duration
	}{
		{"the Holder's default", memLimits, nil, 10 * time.Second},
		{"the store's default", short, nil, 600 * time.Millisecond},
		{"zero means the store's default", short, []machineid.Option{machineid.WithTTL(0)}, 600 * time.Millisecond},
		{"WithTTL over the store's default", short, []machineid.Option{machineid.WithTTL(2 * time.Second)}, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &ttlStore{memClient: newMemClient(newMemStore(true))}
			var set memSettings
			h, err := machineid.NewHolder(s, &set, tt.lim, append(tt.opts, machineid.WithRange(0, 0))...)
			require.NoError(t, err)
			defer h.Release(time.Time{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = h.MachineID(ctx)
			require.NoError(t, err)
			assert.Equal(t, tt.want, time.Duration(s.ttl.Load()), "the TTL of the Holder's claims")
		})
	}
}

// TestHolderStaleCause checks that a lease that is not held reports the
// latest call's cause, even when only the cause changed: first the store
// cannot be reached, then every ID is held by others.
func TestHolderStaleCause(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	ttl := 300 * time.Millisecond
	h, c := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	causes := make(chan error, 100)
	stop := h.Watch(func(l machineid.Lease) {
		if !l.Held && l.Err != nil {
			causes <- l.Err
		}
	})
	defer stop()
	c.cut.Store(true)
	waitFor(t, causes, "the cut client's loss", func(err error) bool { return errors.Is(err, errCut) && errors.Is(err, machineid.ErrLeaseLost) })
	// Another holder takes the ID once the lease expired in the store.
	other, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	require.Eventually(t, func() bool { _, err := other.MachineID(context.Background()); return err == nil }, 10*ttl, ttl/10)
	c.cut.Store(false)
	waitFor(t, causes, "every ID held by others", func(err error) bool { return errors.Is(err, machineid.ErrExhausted) })
	assert.ErrorIs(t, h.Lease().Err, machineid.ErrLeaseLost, "Lease().Err still says the lease was lost")
	assert.ErrorIs(t, h.Lease().Err, machineid.ErrExhausted, "Lease().Err")
}

// waitFor reads causes until one satisfies ok, failing t after a while.
func waitFor(t *testing.T, causes <-chan error, what string, ok func(error) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case err := <-causes:
			if ok(err) {
				return
			}
		case <-timeout:
			t.Fatalf("no lease reported %s within 30s", what)
		}
	}
}

// TestHolderReleaseBounded checks that Release returns within about two
// call timeouts when the store hangs: first a store that honours its
// context, then one that ignores it, which Release gives up on with an
// error that says the lease runs out in the store.
func TestHolderReleaseBounded(t *testing.T) {
	t.Parallel()
	for _, ignores := range []bool{false, true} {
		t.Run(map[bool]string{false: "honours context", true: "ignores context"}[ignores], func(t *testing.T) {
			t.Parallel()
			s := newMemStore(true)
			h, c := newHolder(t, s, machineid.WithTTL(3*time.Second), machineid.WithCallTimeout(200*time.Millisecond))
			_, err := h.MachineID(context.Background())
			require.NoError(t, err)
			if ignores {
				c.stuck.Store(true)
			} else {
				c.hang.Store(true)
			}
			err = h.Release(time.Now())
			if ignores {
				require.ErrorContains(t, err, "the lease runs out in the store after its TTL")
			} else {
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorContains(t, err, "releasing machine ID 0: no answer within 200ms")
			}
			assert.ErrorIs(t, h.Lease().Err, machineid.ErrReleased, "the lease after Release")
			assert.False(t, h.Lease().Held)
			assert.Equal(t, err, h.Release(time.Time{}), "a second Release returns the first one's result")
		})
	}
}

// TestHolderReuseAfterRelease checks that MachineID after Release takes a
// lease again, under a new token, and that the released ID's mark came
// down to what was issued.
func TestHolderReuseAfterRelease(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, _ := newHolder(t, s, machineid.WithRange(3, 3))
	id, err := h.MachineID(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(3), id)
	issued := time.Now().Round(0)
	require.NoError(t, h.Release(issued))
	id, err = h.MachineID(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(3), id, "the ID taken again")
	l := h.Lease()
	assert.True(t, l.Held)
	assert.True(t, l.After.Equal(issued), "After = %v; want the issued time %v", l.After, issued)
}

// TestHolderUnseenOutage checks the outage a lease rides out: the store
// refuses every call from just before a renewal is due, the worst moment,
// for well under 2·TTL/3 − margin − TTL/10, and the lease stays held
// throughout; an outage of two TTLs is seen.
func TestHolderUnseenOutage(t *testing.T) {
	t.Parallel()
	ttl := 3 * time.Second
	margin := ttl / 5
	s := newMemStore(true)
	h, c := newHolder(t, s, machineid.WithTTL(ttl), machineid.WithSafetyMargin(margin))
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	var mu sync.Mutex
	var drops int
	stop := h.Watch(func(l machineid.Lease) {
		if !l.Held {
			mu.Lock()
			drops++
			mu.Unlock()
		}
	})
	defer stop()
	// renewed waits for a renewal to be confirmed and returns when.
	renewed := func() time.Time {
		before := h.Lease().Until
		require.Eventually(t, func() bool { return h.Lease().Until.After(before) }, 2*ttl, time.Millisecond)
		return time.Now()
	}
	start := renewed().Add(ttl/3 - 50*time.Millisecond)
	time.Sleep(time.Until(start))
	c.cut.Store(true)
	// A bound of 2·TTL/3 − margin − TTL/10 = 1.1s for refused calls, with
	// 400ms to spare for a busy machine.
	time.Sleep(2*ttl/3 - margin - ttl/10 - 400*time.Millisecond)
	c.cut.Store(false)
	renewed()
	mu.Lock()
	assert.Zero(t, drops, "the lease was seen lost in an outage of %v", time.Since(start))
	mu.Unlock()
	c.cut.Store(true)
	require.Eventually(t, func() bool { return !h.Lease().Held }, 2*ttl, time.Millisecond, "an outage of two TTLs must be seen")
	assert.ErrorIs(t, h.Lease().Err, errCut, "the loss's cause")
	c.cut.Store(false)
}

// TestHolderLateAnswerIsHeldOnceRenewed checks a Take answered past the
// lease's deadline (TTL − margin after the call was sent), as a store that
// waits inside Take answers: MachineID returns the ID, the lease is not
// reported held until a renewal confirms it, and then it is.
func TestHolderLateAnswerIsHeldOnceRenewed(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, c := newHolder(t, s, machineid.WithTTL(300*time.Millisecond))
	c.delay.Store(int64(400 * time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := h.MachineID(ctx)
	require.NoError(t, err)
	l := h.Lease()
	assert.False(t, l.Held, "an answer past the deadline vouches for nothing")
	assert.ErrorContains(t, l.Err, "past the lease's deadline")
	c.delay.Store(0)
	require.Eventually(t, func() bool { return h.Lease().Held }, 10*time.Second, time.Millisecond, "held once a renewal confirms it")
	assert.Equal(t, id, h.Lease().ID)
}

// TestHolderMachineIDAfterAReleaseInProgress checks that a MachineID made
// while a Release is still freeing the last lease waits for it, rather
// than start a session the release could be mistaken for, and that both
// succeed: the release frees the old lease, and the new one is held.
func TestHolderMachineIDAfterAReleaseInProgress(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, c := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithCallTimeout(time.Second), machineid.WithTTL(3*time.Second))
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	c.release = make(chan struct{})
	released := make(chan error, 1)
	go func() { released <- h.Release(time.Time{}) }()
	require.Eventually(t, func() bool { return !h.Lease().Held }, 5*time.Second, time.Millisecond, "Release has begun")
	got := make(chan error, 1)
	go func() {
		_, err := h.MachineID(context.Background())
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("MachineID returned %v while the release was in progress; want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(c.release)
	require.NoError(t, <-released)
	require.NoError(t, <-got, "MachineID after the release")
	assert.True(t, h.Lease().Held, "the new session's lease")
}

// TestMachineIDWithoutDeadlineIsBounded checks that a MachineID without a
// deadline returns within about the call timeout while the renewer's call
// to the store overruns its context and holds the store's turn (issue 25,
// defect 3: it waited for its turn for ever).
func TestMachineIDWithoutDeadlineIsBounded(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, c := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(300*time.Millisecond))
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	c.stuck.Store(true)
	require.Eventually(t, func() bool { return !h.Lease().Held }, 10*time.Second, time.Millisecond, "the lease lapses while the renewal hangs")
	done := make(chan error, 1)
	go func() {
		_, err := h.MachineID(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("MachineID(context.Background()) still waiting 10s into a 100ms call timeout")
	}
}

// TestSlowWatcherDoesNotDelayRenewals checks that a watcher that blocks
// does not hold up the renewals, which once called the watchers on the
// renewer's goroutine: a slow log handler kept the lease from being
// renewed until it was lost (issue 25, defect 6).
func TestSlowWatcherDoesNotDelayRenewals(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(300*time.Millisecond))
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	var calls atomic.Int32
	unblock := make(chan struct{})
	stop := h.Watch(func(machineid.Lease) {
		if calls.Add(1) == 2 {
			<-unblock
		}
	})
	defer stop()
	defer close(unblock)
	require.Eventually(t, func() bool { return calls.Load() >= 2 }, 10*time.Second, time.Millisecond, "the watcher hears of a renewal")
	s.mu.Lock()
	before := s.calls
	s.mu.Unlock()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.calls >= before+3
	}, 10*time.Second, time.Millisecond, "renewals stopped while a watcher blocked")
	assert.True(t, h.Lease().Held, "the lease is renewed while a watcher blocks")
}

// TestRenewalsKeepTheirPeriod checks, in virtual time, that renewals are
// sent every TTL/3 from when the last one was sent, however late the store
// answers. The lease's deadline counts from the send; a period counted from
// the answer, as run's once was, sent each renewal later by the time the
// store took, which a loaded store took out of the outage a lease rides
// out (a renewal timed out after the deadline it should have come before).
func TestRenewalsKeepTheirPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		c := &slowRenewals{memClient: newMemClient(newMemStore(true)), late: ttl / 12}
		h, err := machineid.NewHolder(c, &memSettings{}, memLimits, machineid.WithTTL(ttl))
		require.NoError(t, err)
		_, err = h.MachineID(context.Background())
		require.NoError(t, err)
		time.Sleep(5*ttl/3 + ttl/6)
		assert.True(t, h.Lease().Held, "renewed in time: %+v", h.Lease())
		require.NoError(t, h.Release(time.Time{}))
		c.mu.Lock()
		defer c.mu.Unlock()
		require.Len(t, c.sent, 5)
		for i := 1; i < len(c.sent); i++ {
			assert.Equal(t, ttl/3, c.sent[i].Sub(c.sent[i-1]), "renewal %d came this long after renewal %d, which took %v to answer", i, i-1, c.late)
		}
	})
}

// slowRenewals is a client whose renewals answer late, and that records
// when each was sent.
type slowRenewals struct {
	*memClient
	late time.Duration

	mu   sync.Mutex
	sent []time.Time
}

func (c *slowRenewals) Renew(ctx context.Context, cl machineid.Claim, id int64) (machineid.Grant, error) {
	c.mu.Lock()
	c.sent = append(c.sent, time.Now())
	c.mu.Unlock()
	defer time.Sleep(c.late)
	return c.memClient.Renew(ctx, cl, id)
}

// downStore fails every call: Take with takeErr, Release with releaseErr.
type downStore struct {
	*memClient
	takeErr, releaseErr error
}

func (s *downStore) Take(context.Context, machineid.Claim) (machineid.Grant, error) {
	return machineid.Grant{}, s.takeErr
}

func (s *downStore) Release(context.Context, machineid.Claim, int64, time.Time) error {
	return s.releaseErr
}

// TestHolderReleaseAfterAFailedTakeSaysItsCauseOnce releases what an
// unanswered take may have got, on a store that fails the release too. The
// release's failure is always reported; its cause is left out when it is
// the take's own, in the same words (a refused connection, as when the
// store is down), which the take's error says already, and kept when it
// differs, and errors.Is reaches it either way.
func TestHolderReleaseAfterAFailedTakeSaysItsCauseOnce(t *testing.T) {
	t.Parallel()
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, tt := range []struct {
		name       string
		releaseErr error
		want       string
	}{
		{"same words", errors.New(refused.Error()),
			"memstore: releasing whatever an unanswered take got: the store failed it as it failed the take; a lease the take may have got runs out after its TTL (2s)"},
		{"other words", errors.New("READONLY You can't write against a read only replica"),
			"memstore: releasing whatever an unanswered take got: READONLY You can't write against a read only replica"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &downStore{memClient: newMemClient(newMemStore(true)), takeErr: refused, releaseErr: tt.releaseErr}
			var set memSettings
			h, err := machineid.NewHolder(s, &set, memLimits, machineid.WithTTL(2*time.Second))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = h.MachineID(ctx)
			require.ErrorIs(t, err, refused, "the take fails with the store's error")
			rerr := h.Release(time.Time{})
			require.Error(t, rerr, "a release the store failed is reported")
			assert.Equal(t, tt.want, rerr.Error())
			assert.ErrorIs(t, rerr, tt.releaseErr, "the release's cause stays in the chain")
			assert.Equal(t, 1, strings.Count(err.Error()+"; "+rerr.Error(), "connection refused"),
				"the cause is said once in the two: %q; %q", err, rerr)
		})
	}
}

// TestWatchersAreToldInOrder checks that watchers hear of each change in
// the order they were added, whichever stopped meanwhile: a watcher may
// wake goroutines (a generator's does), and the lease simulation replays a
// seed only if they wake in the same order each run. They were told in a
// map's random order.
func TestWatchersAreToldInOrder(t *testing.T) {
	t.Parallel()
	s := newMemStore(true)
	h, _ := newHolder(t, s, machineid.WithRange(0, 0), machineid.WithTTL(300*time.Millisecond))
	var mu sync.Mutex
	var heard []int
	var stops []func()
	for i := range 8 {
		stops = append(stops, h.Watch(func(machineid.Lease) {
			mu.Lock()
			heard = append(heard, i)
			mu.Unlock()
		}))
	}
	stops[3]()
	mu.Lock()
	heard = heard[:0] // each heard the current lease as it was added
	mu.Unlock()
	_, err := h.MachineID(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.Release(time.Time{}))
	mu.Lock()
	defer mu.Unlock()
	want := []int{0, 1, 2, 4, 5, 6, 7}
	require.NotEmpty(t, heard)
	require.Zero(t, len(heard)%len(want), "every watcher hears of every change: %v", heard)
	for i := range heard {
		require.Equal(t, want[i%len(want)], heard[i], "the watchers are told in the order they were added: %v", heard)
	}
}
