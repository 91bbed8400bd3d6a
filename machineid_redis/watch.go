package machineid_redis

import (
	"sync"

	"github.com/ringflake/ringflake/machineid"
)

// Watch calls fn with the current lease before returning, and again after
// every change (acquired, renewed with a higher mark, lost with its cause,
// released) until stop is called. Deliveries do not overlap: each is made
// under one lock, with the lease as it is at that moment, so a watcher
// always ends with the latest state. A lease that is not held carries its
// cause in Err: the Redis error that kept renewals from answering, the
// lease taken by another owner, or the release. fn must not block and
// must not call Release or stop. Watch is safe for concurrent use.
func (s *Service) Watch(fn func(machineid.Lease)) (stop func()) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := s.nextW
	s.nextW++
	s.watchers[n] = fn
	fn(s.current())
	var once sync.Once
	return func() {
		once.Do(func() {
			s.wmu.Lock()
			delete(s.watchers, n)
			s.wmu.Unlock()
		})
	}
}

// notify delivers the current lease to every watcher.
func (s *Service) notify() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	l := s.current()
	for _, fn := range s.watchers {
		fn(l)
	}
}
