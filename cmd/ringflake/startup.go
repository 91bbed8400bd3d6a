package main

import (
	"fmt"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
	"github.com/ringflake/ringflake/machineid"
)

// start makes the generator as p.make does, with st.Stop as New's context:
// a signal ends New, which releases what it took. start then releases
// again, within startup.ReleaseTimeout, to learn how that release went (a Holder
// answers a second Release with the first one's result), and returns
// startup.ErrInterrupted, with the release's error if it failed. A generator made
// after all, as the signal came, is closed alike.
func (p *plan) start(st *startup.Startup) (*generator, error) {
	var stopWatch func()
	if st.Leaser != nil {
		stopWatch = st.Leaser.Watch(func(l machineid.Lease) { st.Lease.Store(&l) })
	}
	g, err := p.make(st.Stop)
	if stopWatch != nil {
		stopWatch()
	}
	if st.Stop.Err() == nil {
		return g, err
	}
	deadline := time.NewTimer(startup.ReleaseTimeout)
	defer deadline.Stop()
	var release func() error
	switch {
	case err == nil: // made after all
		defer g.done()
		release = g.Close
	case st.Leaser != nil:
		release = func() error { return st.Leaser.Release(time.Time{}) } // nothing issued: keep the mark
	default:
		return nil, startup.ErrInterrupted
	}
	if err := startup.Within(release, deadline.C); err != nil {
		return nil, fmt.Errorf("%w; releasing the lease: %w", startup.ErrInterrupted, err)
	}
	return nil, startup.ErrInterrupted
}
