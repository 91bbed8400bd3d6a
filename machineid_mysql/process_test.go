package machineid_mysql_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"database/sql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// The environment of a child process: the test binary started again to run
// one generator on a leased machine ID (see child).
const (
	childEnv = "RINGFLAKE_MYSQL_CHILD_DSN"   // the database; set only in a child
	rangeEnv = "RINGFLAKE_MYSQL_CHILD_MAXID" // the range is 0..this
	skewEnv  = "RINGFLAKE_MYSQL_CHILD_SKEW"  // how far the child's clock is off, as a time.Duration
)

// child runs a generator whose machine ID is leased from the database,
// issuing batches of IDs and writing each one to stdout, 8 bytes little
// endian, as soon as it is issued, until SIGTERM; then it closes the
// generator and exits 0. On stderr it reports its lease ("lease N"), each
// change in how NextN fails ("error lost", "error mark-ahead", ...; "error
// untyped: ..." for an error of no expected kind) and each recovery
// ("issuing"). A write to stdout happens only after the IDs are issued, so
// a child killed with SIGKILL loses some IDs it issued, never shows IDs it
// did not.
func child() int {
	hi, _ := strconv.ParseInt(os.Getenv(rangeEnv), 10, 64)
	skew, _ := time.ParseDuration(os.Getenv(skewEnv))
	clock := func() time.Time { return time.Now().Add(skew) }
	db, err := sql.Open("mysql", os.Getenv(childEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fatal", err)
		return 2
	}
	defer db.Close()
	l, err := mm.New(db, machineid.WithTTL(ttl), machineid.WithRange(0, hi)) // New hands it the generator's clock
	if err != nil {
		fmt.Fprintln(os.Stderr, "fatal", err)
		return 2
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var g *ringflake.Generator
	for start := time.Now(); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		g, err = ringflake.New(ctx, ringflake.WithMachineIDSource(l), ringflake.WithClock(clock))
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, machineid.ErrExhausted) || time.Since(start) > 20*time.Second {
			fmt.Fprintln(os.Stderr, "fatal", err)
			return 2
		}
		time.Sleep(50 * time.Millisecond) // every ID is held until its lease expires
	}
	fmt.Fprintln(os.Stderr, "lease", g.Lease().ID)
	ids := make([]ringflake.ID, 16)
	out := make([]byte, 8*len(ids))
	failing := ""
	for {
		select {
		case <-term:
			if err := g.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "close", err)
			}
			fmt.Fprintln(os.Stderr, "closed")
			return 0
		default:
		}
		n, err := g.NextN(ids)
		for i, id := range ids[:n] {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(id))
		}
		if _, werr := os.Stdout.Write(out[:8*n]); werr != nil {
			return 3
		}
		kind := errorKind(err)
		if kind != failing {
			if kind == "" {
				fmt.Fprintln(os.Stderr, "issuing")
			} else {
				fmt.Fprintln(os.Stderr, "error", kind)
			}
			failing = kind
		}
		time.Sleep(time.Millisecond)
	}
}

// errorKind names the kind of a generator's error, "" for nil.
func errorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ringflake.ErrLeaseLost):
		return "lost"
	case errors.Is(err, ringflake.ErrMarkAhead):
		return "mark-ahead"
	case errors.Is(err, ringflake.ErrSequenceExhausted):
		return "exhausted"
	case errors.Is(err, ringflake.ErrClockBehind):
		return "behind"
	}
	return "untyped: " + strings.ReplaceAll(err.Error(), "\n", " ")
}

// proc is a child process seen from the test.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when its output is read and it has exited

	mu     sync.Mutex
	ids    []ringflake.ID
	events []string
}

// spawn starts a child on dsn with machine IDs 0..hi and its clock off by
// skew. The child is killed when the test ends.
func spawn(t *testing.T, dsn string, hi int64, skew time.Duration) *proc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+dsn, rangeEnv+"="+strconv.FormatInt(hi, 10), skewEnv+"="+skew.String())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, done: make(chan struct{})}
	var reads sync.WaitGroup
	reads.Add(2)
	go func() {
		defer reads.Done()
		r := bufio.NewReader(stdout)
		var b [8]byte
		for {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return // a killed child may leave half an ID: it was never issued
			}
			p.mu.Lock()
			p.ids = append(p.ids, ringflake.ID(binary.LittleEndian.Uint64(b[:])))
			p.mu.Unlock()
		}
	}()
	go func() {
		defer reads.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.events = append(p.events, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		reads.Wait()
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// issued returns how many IDs the child has written.
func (p *proc) issued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids)
}

// log returns the child's stderr lines.
func (p *proc) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

// awaitIssued waits until every child has written more than its count in
// from (nil: more than none), or fails the test after d.
func awaitIssued(t *testing.T, procs []*proc, from []int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for i, p := range procs {
		n := 0
		if from != nil {
			n = from[i]
		}
		for p.issued() <= n {
			select {
			case <-p.done:
				t.Fatalf("child %d exited (%v) before issuing more than %d IDs; its log: %q", i, p.cmd.ProcessState, n, p.log())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("child %d issued no more than %d IDs within %v; its log: %q", i, n, d, p.log())
			}
		}
	}
}

// counts returns how many IDs each child has written.
func counts(procs []*proc) []int {
	n := make([]int, len(procs))
	for i, p := range procs {
		n[i] = p.issued()
	}
	return n
}

// stop sends SIGTERM to every child and waits for each to close its
// generator and exit 0.
func stop(t *testing.T, procs []*proc) {
	t.Helper()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for i, p := range procs {
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("child %d did not exit within 15s of SIGTERM; its log: %q", i, p.log())
		}
		assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "child %d's exit; its log: %q", i, p.log())
		assert.Contains(t, p.log(), "closed", "child %d should have closed its generator", i)
	}
}

// kill kills every child with SIGKILL and waits for them.
func kill(procs []*proc) {
	for _, p := range procs {
		_ = p.cmd.Process.Kill()
	}
	for _, p := range procs {
		<-p.done
	}
}

// checkUnique fails the test if two children, or one twice, wrote the same
// ID, or if a child reported an error of no expected kind. It returns how
// many IDs there were.
func checkUnique(t *testing.T, procs []*proc) int {
	t.Helper()
	seen := make(map[ringflake.ID]int)
	dups := 0
	for i, p := range procs {
		p.mu.Lock()
		for _, id := range p.ids {
			if j, ok := seen[id]; ok {
				if dups++; dups <= 5 {
					t.Errorf("ID %d (%+v) issued by child %d and child %d", id, ringflake.DefaultLayout().Decompose(id), j, i)
				}
			}
			seen[id] = i
		}
		p.mu.Unlock()
		for _, e := range p.log() {
			assert.NotContains(t, e, "untyped", "child %d failed with an error of no expected kind", i)
		}
	}
	assert.Zero(t, dups, "IDs issued twice")
	return len(seen)
}

// TestServerRestartWhileProcessesIssue restarts the database under
// processes that hold leases and issue: once shut down for longer than the
// TTL, so that every lease is lost, and once killed and back at once. Every
// process must stop with a typed error while it cannot prove its lease and
// issue again once the database is back, and nothing may be issued twice.
func TestServerRestartWhileProcessesIssue(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const n = 3
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = spawn(t, srv.DSN(), n, 0)
	}
	awaitIssued(t, procs, nil, 30*time.Second)
	time.Sleep(300 * time.Millisecond)

	srv.Stop()
	time.Sleep(ttl + ttl/2) // every lease runs out meanwhile
	before := counts(procs)
	srv.Start()
	awaitIssued(t, procs, before, 10*time.Second)
	for i, p := range procs {
		assert.Contains(t, p.log(), "error lost", "child %d should have stopped while the database was down for longer than the TTL", i)
	}

	srv.Kill()
	time.Sleep(100 * time.Millisecond)
	srv.Start()
	time.Sleep(ttl)
	awaitIssued(t, procs, counts(procs), 10*time.Second)

	stop(t, procs)
	total := checkUnique(t, procs)
	t.Logf("%d IDs from %d processes; logs: %q %q %q", total, n, procs[0].log(), procs[1].log(), procs[2].log())
}

// TestKilledProcessesDoNotRepeat kills, with SIGKILL, processes that hold
// every ID of the range, and starts new ones whose clocks are 1.5 s behind.
// The new processes can take the IDs only once the leases expire by the
// database's clock, and must then wait for their clocks to pass the marks the
// killed ones left, so that none of them repeats an ID.
func TestKilledProcessesDoNotRepeat(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const n = 3
	old := make([]*proc, n)
	for i := range old {
		old[i] = spawn(t, srv.DSN(), n-1, 0)
	}
	awaitIssued(t, old, nil, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	kill(old)

	const skew = -1500 * time.Millisecond
	fresh := make([]*proc, n)
	for i := range fresh {
		fresh[i] = spawn(t, srv.DSN(), n-1, skew)
	}
	awaitIssued(t, fresh, nil, 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	stop(t, fresh)

	all := append(append([]*proc(nil), old...), fresh...)
	total := checkUnique(t, all)
	// Stronger than no repeat: for every machine ID, the new processes
	// started above the latest time the killed ones used.
	layout := ringflake.DefaultLayout()
	last := map[int64]time.Time{}
	for _, p := range old {
		for _, id := range p.ids {
			parts := layout.Decompose(id)
			if parts.Time.After(last[parts.Machine]) {
				last[parts.Machine] = parts.Time
			}
		}
	}
	for i, p := range fresh {
		for _, id := range p.ids {
			parts := layout.Decompose(id)
			if !parts.Time.After(last[parts.Machine]) {
				t.Fatalf("new child %d issued %d at %v on machine %d, not after the killed holder's last time %v", i, id, parts.Time, parts.Machine, last[parts.Machine])
			}
		}
	}
	t.Logf("%d IDs from %d processes; the new ones' logs: %q %q %q", total, 2*n, fresh[0].log(), fresh[1].log(), fresh[2].log())
}

// TestPausedServerWhileProcessesIssue pauses the database (SIGSTOP) under
// processes that hold leases and issue, for longer than the TTL: each
// must stop with a typed error before its lease could expire, issue again
// once the database answers, and nothing may be issued twice.
func TestPausedServerWhileProcessesIssue(t *testing.T) {
	t.Parallel()
	srv, _ := startDB(t)
	const n = 3
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = spawn(t, srv.DSN(), n, 0)
	}
	awaitIssued(t, procs, nil, 30*time.Second)

	srv.Pause()
	time.Sleep(ttl + ttl/2) // every lease runs out meanwhile, by the holders' clocks
	before := counts(procs)
	srv.Resume()
	awaitIssued(t, procs, before, 20*time.Second)
	for i, p := range procs {
		assert.Contains(t, p.log(), "error lost", "child %d should have stopped while the database was paused for longer than the TTL", i)
	}
	stop(t, procs)
	total := checkUnique(t, procs)
	t.Logf("%d IDs from %d processes; logs: %q %q %q", total, n, procs[0].log(), procs[1].log(), procs[2].log())
}
