package machineid_file

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// The process tests run this test binary again as a helper: a process
// that issues IDs from a generator on a file-guarded machine ID (or, for
// the control, a plain fixed one) and prints them, until killed.
const helperEnv = "MACHINEID_FILE_HELPER" // "file" or "plain"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain issues IDs on stdout, after "ready ID" on stderr, with the
// machine ID in HELPER_LO..HELPER_HI guarded by a file in HELPER_DIR
// (mode "file"), or HELPER_LO as a plain fixed ID (mode "plain"), on the
// clock helperClock gives, with a lease TTL of a second.
func helperMain(mode string) int {
	lo, _ := strconv.ParseInt(os.Getenv("HELPER_LO"), 10, 64)
	hi, _ := strconv.ParseInt(os.Getenv("HELPER_HI"), 10, 64)
	clock, run := helperClock()
	if mode != "plain" {
		run() // a file-guarded ID waits in New for its clock to pass the mark
	}
	opts := []ringflake.Option{ringflake.WithClock(clock), ringflake.WithMaxWait(time.Second)}
	if mode == "plain" {
		opts = append(opts, ringflake.WithMachineID(lo))
	} else {
		// New hands the Holder the generator's clock, for its marks.
		h, err := New(os.Getenv("HELPER_DIR"), machineid.WithRange(lo, hi), machineid.WithTTL(time.Second))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		opts = append(opts, ringflake.WithMachineIDSource(h))
	}
	g, err := ringflake.New(context.Background(), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "ready", g.Lease().ID)
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id, err := g.NextID()
		if err != nil {
			_ = w.Flush()
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		run()
		fmt.Fprintln(w, int64(id))
		if i%64 == 0 && w.Flush() != nil {
			return 1
		}
	}
}

// helperClock returns a helper's clock, and run, which starts it if it
// is held. With HELPER_START (Unix nanoseconds) the clock reads START until
// run is called, and runs on from there: a plain helper calls run once it
// has issued its first ID, so that ID is at START's tick whatever delayed
// the process's start, and a file-guarded one calls it at once. Without,
// it is the system's clock HELPER_OFFSET off, running.
func helperClock() (clock func() time.Time, run func()) {
	off, _ := time.ParseDuration(os.Getenv("HELPER_OFFSET"))
	nanos, err := strconv.ParseInt(os.Getenv("HELPER_START"), 10, 64)
	if err != nil {
		return func() time.Time { return time.Now().Add(off) }, func() {}
	}
	start := time.Unix(0, nanos)
	var ran atomic.Pointer[time.Time] // when run was first called
	clock = func() time.Time {
		if r := ran.Load(); r != nil {
			return start.Add(time.Since(*r))
		}
		return start
	}
	return clock, func() {
		if ran.Load() == nil {
			now := time.Now()
			ran.CompareAndSwap(nil, &now)
		}
	}
}

// proc is a helper process.
type proc struct {
	cmd    *exec.Cmd
	ready  chan int64 // gets the machine ID once it issues; closed if it exits first
	mu     sync.Mutex // protects ids and stderr
	ids    []ringflake.ID
	stderr strings.Builder
	done   chan struct{} // closed once both outputs are read
}

// start starts a helper on lo..hi in dir, its clock off by offset.
func start(t *testing.T, mode, dir string, lo, hi int64, offset time.Duration) *proc {
	t.Helper()
	return startEnv(t, mode, dir, lo, hi, "HELPER_OFFSET="+offset.String())
}

// startAt starts a helper on lo..hi in dir whose clock starts at at (see
// helperClock).
func startAt(t *testing.T, mode, dir string, lo, hi int64, at time.Time) *proc {
	t.Helper()
	return startEnv(t, mode, dir, lo, hi, fmt.Sprintf("HELPER_START=%d", at.UnixNano()))
}

func startEnv(t *testing.T, mode, dir string, lo, hi int64, clock string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "HELPER_DIR="+dir,
		fmt.Sprintf("HELPER_LO=%d", lo), fmt.Sprintf("HELPER_HI=%d", hi), clock)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, ready: make(chan int64, 1), done: make(chan struct{})}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done; _ = p.cmd.Wait() })
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.readIDs(stdout) }()
	go func() { defer wg.Done(); p.readStderr(stderr) }()
	go func() { wg.Wait(); close(p.done) }()
	return p
}

func (p *proc) readIDs(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if n, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
			p.mu.Lock()
			p.ids = append(p.ids, ringflake.ID(n))
			p.mu.Unlock()
		}
	}
}

func (p *proc) readStderr(r io.Reader) {
	defer close(p.ready)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "ready "); ok {
			n, _ := strconv.ParseInt(id, 10, 64)
			p.ready <- n
			continue
		}
		p.mu.Lock()
		p.stderr.WriteString(line + "\n")
		p.mu.Unlock()
	}
}

// await returns the helper's machine ID once it issues, or fails t.
func (p *proc) await(t *testing.T) int64 {
	t.Helper()
	select {
	case id, ok := <-p.ready:
		if ok {
			return id
		}
	case <-time.After(60 * time.Second):
	}
	<-p.done
	t.Fatalf("helper %d issued nothing: %s", p.cmd.Process.Pid, p.errText())
	return -1
}

// issued waits until the helper has printed n IDs.
func (p *proc) issued(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.ids) >= n }, 60*time.Second, time.Millisecond,
		"helper %d printed fewer than %d IDs", p.cmd.Process.Pid, n)
}

// reaches waits until the helper has printed an ID of time tm or later.
// A helper's IDs increase while its clock does not step back, so its last
// is its latest.
func (p *proc) reaches(t *testing.T, tm time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := len(p.ids)
		return n > 0 && !ringflake.DefaultLayout().Decompose(p.ids[n-1]).Time.Before(tm)
	}, 60*time.Second, time.Millisecond, "helper %d issued nothing at or after %v", p.cmd.Process.Pid, tm)
}

// kill SIGKILLs the helper and returns the IDs it printed.
func (p *proc) kill() []ringflake.ID {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = p.cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids
}

func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// duplicates counts the IDs of b that are also in a.
func duplicates(a, b []ringflake.ID) int {
	seen := make(map[ringflake.ID]bool, len(a))
	for _, id := range a {
		seen[id] = true
	}
	n := 0
	for _, id := range b {
		if seen[id] {
			n++
		}
	}
	return n
}

// TestKillThenRestartBehind SIGKILLs a process issuing on a fixed ID and
// starts another on the ID with its clock at the first's first ID, behind
// by as long as the first ran: the second waits until its clock passes the
// first's mark, and no ID comes twice. A control run on a plain fixed ID
// shows the scenario repeats IDs without the file.
//
// The second's clock starts in its own process, so however long the
// process takes to start, its clock is that far behind. The control's
// clock holds at that first ID's tick until it has issued there, so its
// first ID is the first's first ID (sequence 0 of that tick), whatever the
// scheduling: under a CPU hog, two processes' ticks can miss each other
// (each issues in bursts, in a third of the ticks or fewer), and with its
// clock set before it started the control began past most of the first's.
func TestKillThenRestartBehind(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode     string
		wantDups bool
	}{{"file", false}, {"plain", true}} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a := start(t, tt.mode, dir, 3, 3, 0)
			a.await(t)
			a.issued(t, 20000)
			first := a.kill()
			b := startAt(t, tt.mode, dir, 3, 3, minTime(first))
			require.Equal(t, int64(3), b.await(t))
			b.issued(t, 20000)
			b.reaches(t, maxTime(first))
			second := b.kill()
			dups := duplicates(first, second)
			if !tt.wantDups {
				assert.Zero(t, dups, "IDs issued twice across a kill and a restart behind the mark; the second's stderr: %s", b.errText())
				last, next := maxTime(first), minTime(second)
				assert.True(t, next.After(last), "the restarted process issued at %v, not after the killed one's last ID at %v", next, last)
			} else {
				assert.NotZero(t, dups, "a plain fixed ID repeats IDs in this scenario; if not, the test no longer shows what the file prevents")
			}
		})
	}
}

func maxTime(ids []ringflake.ID) time.Time {
	var m time.Time
	for _, id := range ids {
		if t := ringflake.DefaultLayout().Decompose(id).Time; t.After(m) {
			m = t
		}
	}
	return m
}

func minTime(ids []ringflake.ID) time.Time {
	m := time.Unix(1<<40, 0)
	for _, id := range ids {
		if t := ringflake.DefaultLayout().Decompose(id).Time; t.Before(m) {
			m = t
		}
	}
	return m
}

// TestTwinProcess starts a second process on a fixed ID a live one holds:
// it waits, saying once on stderr (slog.Default: the helper has no
// logger) that the ID is held, naming the file and the holder's PID, and
// issues nothing; once the holder is killed with SIGKILL, the kernel frees
// its lock, and the twin takes the ID at once and issues after the
// holder's last ID.
func TestTwinProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := start(t, "file", dir, 4, 4, 0)
	a.await(t)
	b := start(t, "file", dir, 4, 4, 0)
	require.Eventually(t, func() bool { return strings.Contains(b.errText(), "waiting for a machine ID") }, 30*time.Second, 10*time.Millisecond,
		"the twin should say, within a second or so, that it waits; stderr %q", b.errText())
	msg := b.errText()
	assert.Contains(t, msg, "machine ID 4 is held by another live process")
	assert.Contains(t, msg, fmt.Sprintf("pid %d", a.cmd.Process.Pid), "names the holder's PID")
	assert.Contains(t, msg, dir+"/machine-4", "names the file")
	b.mu.Lock()
	assert.Empty(t, b.ids, "the twin issues nothing while the holder lives")
	b.mu.Unlock()

	first := a.kill()
	killed := time.Now()
	require.Equal(t, int64(4), b.await(t), "the twin takes the ID once the holder is killed")
	t.Logf("the twin issued %v after the holder was killed", time.Since(killed).Round(time.Millisecond))
	b.issued(t, 100)
	second := b.kill()
	assert.Zero(t, duplicates(first, second), "IDs issued twice across the handover")
	assert.True(t, minTime(second).After(maxTime(first)), "the twin issued at %v, not after the holder's last ID at %v", minTime(second), maxTime(first))
}

// TestRangeWithKills runs four processes on the range 0..3, then, in
// rounds, SIGKILLs one and starts another with its clock behind: the
// newcomer gets the killed one's ID at once, waits out its mark, and no
// ID comes twice across all of them.
func TestRangeWithKills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := map[int64]*proc{}
	for range 4 {
		p := start(t, "file", dir, 0, 3, 0)
		id := p.await(t)
		require.Nil(t, live[id], "two live processes got machine ID %d", id)
		live[id] = p
	}
	var all [][]ringflake.ID
	for round := range 4 {
		victim := int64(round % 4)
		live[victim].issued(t, 2000)
		all = append(all, live[victim].kill())
		p := start(t, "file", dir, 0, 3, -time.Duration(round+1)*300*time.Millisecond)
		id := p.await(t)
		assert.Equal(t, victim, id, "round %d: the newcomer gets the killed process's ID, the only free one", round)
		live[id] = p
	}
	for _, p := range live {
		p.issued(t, 2000)
		all = append(all, p.kill())
	}
	seen := map[ringflake.ID]int{}
	dups := 0
	for i, ids := range all {
		for _, id := range ids {
			if j, ok := seen[id]; ok && j != i {
				dups++
			}
			seen[id] = i
		}
	}
	assert.Zero(t, dups, "IDs issued by two of the processes")
	assert.Greater(t, len(seen), 8*2000, "IDs issued in all")
}
