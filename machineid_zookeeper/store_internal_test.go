package machineid_zookeeper

import (
	"context"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/zktest"
	"github.com/ringflake/ringflake/machineid"
)

// A take whose answer was lost is found by the next take of the same token,
// which the Holder makes: the same ID, the same After, the mark raised, and
// no second node; and a renewal whose answer was lost moved the versions,
// which the next one adopts.
func TestTakeAndRenewFindTheirTrace(t *testing.T) {
	e := zktest.Start(t)
	s := &store{servers: e.Addrs(), held: map[string]*holding{}, settings: settings{prefix: defaultPrefix}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := func() machineid.Claim {
		now := time.Now()
		return machineid.Claim{Token: "trace", Lo: 2, Hi: 5, TTL: 2 * time.Second, Now: now, Until: now.Add(2 * time.Second), MaxOffset: -1}
	}
	first, err := s.Take(ctx, claim())
	if err != nil {
		t.Fatalf("Take = %v", err)
	}
	c := claim()
	again, err := s.Take(ctx, c)
	switch {
	case err != nil:
		t.Fatalf("Take again = %v; want the same ID", err)
	case again.ID != first.ID || !again.After.Equal(first.After):
		t.Fatalf("Take again = ID %d After %v; want ID %d After %v", again.ID, again.After, first.ID, first.After)
	case again.Until.Before(c.Until):
		t.Fatalf("Take again: Until %v; want at least %v", again.Until, c.Until)
	}
	h := s.held["trace"]
	owners, _, err := s.list(ctx, h.sess)
	if err != nil || len(owners) != 1 {
		t.Fatalf("owner nodes = %v, %v; want one", owners, err)
	}

	// A renewal applied, whose answer the Holder never saw.
	lost := *h
	if _, err := s.Renew(ctx, claim(), first.ID); err != nil {
		t.Fatalf("Renew = %v", err)
	}
	h.ownerVersion, h.markVersion, h.mark = lost.ownerVersion, lost.markVersion, lost.mark
	if _, err := s.Renew(ctx, claim(), first.ID); err != nil {
		t.Fatalf("Renew after a lost answer = %v; want it to adopt the versions", err)
	}
	if err := s.Release(ctx, claim(), first.ID, time.Now()); err != nil {
		t.Fatalf("Release = %v", err)
	}
}
