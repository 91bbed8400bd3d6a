package machineid_postgres

import (
	"sync"

	"github.com/ringflake/ringflake/machineid"
)

// Watch calls fn with the current lease before returning, and again after
// every change (taken, renewed with a later mark, lost with its cause,
// released) until stop is called. Calls to fn do not overlap: each is made
// under one lock, with the lease as it is at that moment, so a watcher
// always ends with the latest state, though it may hear of one state
// twice. fn must not block, and must not call Watch, stop or Release. Watch
// and stop are safe for concurrent use; stop is safe to call more than
// once.
func (l *Leaser) Watch(fn func(machineid.Lease)) (stop func()) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	n := l.nextW
	l.nextW++
	l.watchers[n] = fn
	fn(l.Lease())
	var once sync.Once
	return func() {
		once.Do(func() {
			l.wmu.Lock()
			delete(l.watchers, n)
			l.wmu.Unlock()
		})
	}
}

// notify delivers the current lease to every watcher.
func (l *Leaser) notify() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	lease := l.Lease()
	for _, fn := range l.watchers {
		fn(lease)
	}
}
