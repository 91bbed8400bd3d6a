package machineid_redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
)

// startOf returns the server's start as a renewal by a token that holds
// nothing reports it (a *machineid.RestartError), and when it answered.
func startOf(t *testing.T, s *store) (start, answered time.Time) {
	t.Helper()
	_, err := s.Renew(context.Background(), claimAt("nobody", 0, 0, scanTTL), 0)
	answered = time.Now()
	var re *machineid.RestartError
	require.ErrorAs(t, err, &re, "a renewal of a lease the token does not hold says when the server started")
	return re.Start, answered
}

// TestStartAfterASnapshot restarts Redis from a snapshot that holds the
// start marker of the process before it. The marker names the old
// process, so the new one must not take its time for its own start, which
// would put the restart floor before the restart; and once a call has set
// the marker, the start stays at or before that call, where whole seconds
// of uptime alone put it up to a second after the server's start.
func TestStartAfterASnapshot(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	_, s, err := newStore(c, []machineid.Option{machineid.WithRange(0, 0), machineid.WithTTL(scanTTL)})
	require.NoError(t, err)
	_, err = s.Take(context.Background(), claimAt("a", 0, 0, scanTTL))
	require.NoError(t, err)
	old := srv.Do("GET", defaultPrefix+"START")
	require.Equal(t, "OK", srv.Do("SAVE"))

	srv.Stop()
	stopped := time.Now()
	srv.Restart() // from the snapshot, with the old process's marker
	require.Equal(t, old, srv.Do("GET", defaultPrefix+"START"), "the snapshot brings the old process's marker back")
	run := srv.Do("INFO", "server")
	require.NotContains(t, run, "run_id:"+strings.Fields(old)[0], "a new process has a new run_id")

	first, answered := startOf(t, s)
	assert.False(t, first.Before(stopped.Add(-time.Millisecond)),
		"the start %v is before the old process was stopped (%v): the old process's marker was taken for this one's", first, stopped)
	assert.False(t, first.After(answered), "the start %v is after the call that read it answered (%v)", first, answered)
	time.Sleep(1100 * time.Millisecond) // past the second the server started in
	again, _ := startOf(t, s)
	assert.False(t, again.After(answered),
		"the start %v is after the first call since the restart answered (%v): the marker that call set should hold it there", again, answered)
	assert.False(t, again.Before(stopped.Add(-time.Millisecond)), "the start %v is before the old process was stopped (%v)", again, stopped)
}

// TestStartOfAQuietServer has the first call reach a server up for over
// two seconds. Its start is then the end of the second it started in, by
// its uptime, not the time of that call: newcomers after a restart that no
// one called for a while find the restart floor as far behind as before.
func TestStartOfAQuietServer(t *testing.T) {
	t.Parallel()
	began := time.Now()
	srv := redistest.Start(t)
	srv.WaitUptime(2 * time.Second)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	_, s, err := newStore(c, []machineid.Option{machineid.WithRange(0, 0), machineid.WithTTL(scanTTL)})
	require.NoError(t, err)
	sent := time.Now()
	start, _ := startOf(t, s)
	assert.True(t, start.Before(sent.Add(-time.Second)), "the start %v should be no later than the end of the second the server started in, over a second before the first call (%v)", start, sent)
	assert.False(t, start.Before(began.Add(-time.Millisecond)), "the start %v is before the server was started (%v)", start, began)
}
