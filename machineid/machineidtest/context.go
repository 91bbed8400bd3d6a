package machineidtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testContext asks for an ID with contexts already done: MachineID returns
// at once an error wrapping the context's error. Releasing the Leaser then
// frees whatever the call took, so another holder gets the ID at once.
func testContext(t *testing.T, h Harness) {
	led := newLedger(t, h)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"past its deadline", expired, context.DeadlineExceeded},
	} {
		l := led.newHolder(contextID, contextID)
		start := time.Now()
		id, err := l.MachineID(tt.ctx)
		took := time.Since(start)
		switch {
		case err == nil:
			t.Errorf("holder %d: MachineID(a context %s) = %d, nil; want an error wrapping %v", l.n, tt.name, id, tt.want)
		case !errors.Is(err, tt.want):
			t.Errorf("holder %d: MachineID(a context %s) = %v; want an error wrapping %v", l.n, tt.name, err, tt.want)
		}
		if took > h.TTL/2 {
			t.Errorf("holder %d: MachineID(a context %s) took %v; want it to return at once", l.n, tt.name, took)
		}
		if err := l.Release(time.Time{}); err != nil {
			t.Errorf("holder %d: Release after MachineID(a context %s) = %v; want nil", l.n, tt.name, err)
		}
	}
	next := led.newHolder(contextID, contextID)
	ctx, cancel := context.WithTimeout(context.Background(), h.TTL)
	defer cancel()
	if _, err := next.MachineID(ctx); err != nil {
		t.Errorf("holder %d could not take ID %d once the holders whose MachineID had a done context were released: %v; want it at once",
			next.n, contextID, err)
	}
	led.check()
}
