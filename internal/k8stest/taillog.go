package k8stest

import (
	"strings"
	"sync"
)

// tailLog keeps the last 64 KiB written to it; it is safe for concurrent
// use.
type tailLog struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 64 << 10

func (t *tailLog) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailLog) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
