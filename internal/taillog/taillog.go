// Package taillog keeps the end of a test server's output, for the
// messages of a test that failed to start or reach it (internal/etcdtest,
// internal/k8stest, internal/zktest).
package taillog

import (
	"strings"
	"sync"
)

// size is how much a Log keeps: the last 64 KiB.
const size = 64 << 10

// A Log keeps the last 64 KiB written to it. Its zero value is ready to
// use, and it is safe for concurrent use.
type Log struct {
	mu sync.Mutex
	b  []byte
}

// Write appends p, dropping what falls out of the last 64 KiB.
func (t *Log) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > size {
		t.b = append(t.b[:0], t.b[len(t.b)-size:]...)
	}
	return len(p), nil
}

// String returns what is kept, without leading or trailing space.
func (t *Log) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
