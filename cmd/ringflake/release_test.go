package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
	"github.com/ringflake/ringflake/machineid"
)

// pausedStore is a store whose server is paused (SIGSTOP) until resume is
// closed: a Take waits for it, whatever its context says, as a call on a
// connection to a stopped server does. Its client can be closed, after
// which a call fails, as pgxpool's does with "closed pool".
type pausedStore struct {
	resume chan struct{}

	mu       sync.Mutex
	closed   bool // the client is closed
	released int  // releases that reached the store
	late     int  // releases that came after the client was closed
}

func (s *pausedStore) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	<-s.resume
	return machineid.Grant{ID: c.Lo, Until: c.Until}, nil
}

func (s *pausedStore) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	return machineid.Grant{ID: id, Until: c.Until}, nil
}

func (s *pausedStore) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.late++
		return context.Canceled
	}
	s.released++
	return nil
}

func (s *pausedStore) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// TestClientClosedAfterRelease gives New a Holder over a paused store: New
// gives up on it while its take waits, and leaves the release to run once
// the take returns. The command's close of the store's client, made with
// startup.CloseAfterRelease as every --lease store's is, must wait for that
// release: closed first, the release failed on a closed pool and the lease
// was left to run out (issue 36; with close called directly the store sees
// its release only after the close).
func TestClientClosedAfterRelease(t *testing.T) {
	st := &pausedStore{resume: make(chan struct{})}
	h, err := machineid.NewHolder[struct{}](st, nil, machineid.Limits{Name: "paused"}, machineid.WithRange(0, 3))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = ringflake.New(ctx, ringflake.WithMachineIDSource(h))
	require.Error(t, err, "New gives up on the paused store")
	close(st.resume) // the server resumes: the take returns, and New's release follows in the background
	startup.CloseAfterRelease(h, st.close)()
	st.mu.Lock()
	defer st.mu.Unlock()
	assert.True(t, st.closed)
	assert.Equal(t, 1, st.released, "the lease the take got is released once, before the client closes")
	assert.Zero(t, st.late, "no release comes after the client closed")
}
