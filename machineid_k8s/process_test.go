//go:build linux

package machineid_k8s_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/k8stest"
)

// TestProcessesKilled runs four worker processes on four IDs against one
// kube-apiserver, and kills one with SIGKILL every 3s, starting a new one
// in its place at once: the new one can only take the killed one's ID,
// once it has seen the Lease unchanged for its duration plus the margin
// (2.4s), and must start after the mark the killed one left. No ID may be
// issued twice across all of them.
func TestProcessesKilled(t *testing.T) {
	t.Parallel()
	s := k8stest.Start(t)
	s.CreateNamespace("workers")
	srv := apiServer{url: s.URL, caFile: s.CAFile, token: s.Token(k8stest.Admin), namespace: "workers"}
	const slots = 4
	var all []*worker
	live := make([]*worker, slots)
	for i := range live {
		live[i] = startWorker(t, fmt.Sprintf("w%d.0", i), srv, 0, slots-1)
		all = append(all, live[i])
	}
	time.Sleep(2 * time.Second)
	for round := range 6 {
		i := round % slots
		live[i].kill()
		live[i] = startWorker(t, fmt.Sprintf("w%d.%d", i, round/slots+1), srv, 0, slots-1)
		all = append(all, live[i])
		time.Sleep(3 * time.Second)
	}
	time.Sleep(4 * time.Second) // the last one waits out the Lease's duration and the margin
	for _, w := range live {
		w.term(t)
	}
	checkWorkers(t, all)
	for _, w := range live {
		assert.NotEmpty(t, w.ids(t), "%s, started 4s or more before the end, issued nothing; events:\n%s", w.name, w.events())
	}
}

// checkWorkers fails the test if two workers issued the same ID or one
// reported an error of an unexpected kind, and logs what each did.
func checkWorkers(t *testing.T, ws []*worker) {
	t.Helper()
	layout := ringflake.DefaultLayout()
	seen := make(map[ringflake.ID]string)
	total := 0
	for _, w := range ws {
		ids := w.ids(t)
		total += len(ids)
		machines := map[int64]int{}
		for _, id := range ids {
			machines[layout.Decompose(id).Machine]++
			if other, dup := seen[id]; dup {
				p := layout.Decompose(id)
				t.Errorf("ID %d (machine %d, time %v, sequence %d) issued by %s and %s", id, p.Machine, p.Time.Format(time.StampMicro), p.Sequence, other, w.name)
				continue
			}
			seen[id] = w.name
		}
		events := w.events()
		assert.NotContains(t, events, " BAD ", "%s reported an error of an unexpected kind:\n%s", w.name, events)
		t.Logf("%s: %d IDs, machines %v, %d events: %s", w.name, len(ids), machines, strings.Count(events, "\n"), summarize(events))
	}
	t.Logf("%d IDs from %d processes, all distinct", total, len(ws))
}

// summarize counts a worker's event lines by their first two words.
func summarize(events string) string {
	counts := map[string]int{}
	var order []string
	for line := range strings.Lines(events) {
		f := strings.Fields(line)
		key := strings.Join(f[:min(2, len(f))], " ")
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "[%s ×%d] ", k, counts[k])
	}
	return b.String()
}

// worker is one worker process; see work.
type worker struct {
	name string
	out  string // the IDs file
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
}

// startWorker starts a worker on IDs lo..hi, killed when the test ends.
func startWorker(t *testing.T, name string, srv apiServer, lo, hi int64) *worker {
	t.Helper()
	w := &worker{name: name, out: filepath.Join(t.TempDir(), name+".ids"), log: &syncBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = workerEnv(w.out, srv, lo, hi)
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start(), "starting worker %s", name)
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(w.kill)
	return w
}

// kill ends the worker with SIGKILL, as a crash would, and waits for it.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.done
}

// term asks the worker to close its generator and exit, and waits for it
// at most 10s.
func (w *worker) term(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not exit within 10s of SIGTERM; events:\n%s", w.name, w.events())
		w.kill()
	}
}

// ids returns the IDs the worker wrote, in order; a record cut short by a
// kill is dropped.
func (w *worker) ids(t *testing.T) []ringflake.ID {
	t.Helper()
	b, err := os.ReadFile(w.out)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	ids := make([]ringflake.ID, len(b)/8)
	for i := range ids {
		ids[i] = ringflake.ID(binary.BigEndian.Uint64(b[8*i:]))
	}
	return ids
}

// events returns what the worker printed.
func (w *worker) events() string { return w.log.String() }

// syncBuffer is a bytes buffer that a worker's stdout and stderr share,
// under a mutex.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
