package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/internal/redistest"
)

// proc is the outcome of one CLI process.
type proc struct {
	args   []string
	ids    []int64
	stderr string
	killed bool
	code   int
}

// runCLI runs the binary and, if stopAfter > 0, sends sig after that long.
// Only complete lines count: a killed process may leave half a line.
func runCLI(ctx context.Context, bin string, args []string, stopAfter time.Duration, sig syscall.Signal) (proc, error) {
	return runCLIEnv(ctx, bin, nil, args, stopAfter, sig)
}

// runCLIEnv is runCLI with the environment env, or the test's if nil.
func runCLIEnv(ctx context.Context, bin string, env, args []string, stopAfter time.Duration, sig syscall.Signal) (proc, error) {
	p := proc{args: args}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return p, err
	}
	if stopAfter > 0 {
		timer := time.AfterFunc(stopAfter, func() { _ = cmd.Process.Signal(sig) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	p.stderr = stderr.String()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.killed = true
		}
		p.code = ee.ExitCode()
	} else if err != nil {
		return p, err
	}
	out := stdout.String()
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i]
	} else {
		out = ""
	}
	for _, line := range strings.Fields(out) {
		id, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return p, fmt.Errorf("stdout line %q is not a decimal ID", line)
		}
		p.ids = append(p.ids, id)
	}
	return p, nil
}

// TestCLIProcessesKilledAndRestartedShareOneRedis runs rounds of CLI
// processes against one Redis with a small range of machine IDs: some
// finish, some are killed with SIGKILL (holding their lease until the TTL),
// some stop on SIGTERM (releasing it), and some run with their clock behind.
// Every ID printed by any of them must be distinct, and every refusal must
// say why on one line.
func TestCLIProcessesKilledAndRestartedShareOneRedis(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	const rounds, perRound = 6, 5
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		mu    sync.Mutex
		procs []proc
	)
	for round := range rounds {
		var g errgroup.Group
		for i := range perRound {
			args := []string{"gen", "--lease", "redis://" + srv.Addr, "--machine-range", "0-6", "--lease-ttl", "1s", "-n", "50000"}
			if (round+i)%4 == 3 {
				args = append(args, "--clock-offset", "-700ms")
			}
			var stopAfter time.Duration
			sig := syscall.SIGKILL
			switch i % 3 {
			case 0:
				stopAfter = time.Duration(rng.IntN(40)+1) * time.Millisecond
			case 1:
				stopAfter, sig = time.Duration(rng.IntN(40)+1)*time.Millisecond, syscall.SIGTERM
			}
			g.Go(func() error {
				p, err := runCLI(context.Background(), bin, args, stopAfter, sig)
				if err != nil {
					return fmt.Errorf("round %d, %v: %w", round, args, err)
				}
				mu.Lock()
				procs = append(procs, p)
				mu.Unlock()
				return nil
			})
		}
		require.NoError(t, g.Wait())
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
	}

	var all []int64
	outcomes := map[string]int{}
	for _, p := range procs {
		all = append(all, p.ids...)
		switch {
		case p.killed:
			outcomes["killed"]++
		case p.code == 0:
			outcomes["finished"]++
			checkStderr(t, p)
		default:
			outcomes[reason(checkStderr(t, p))]++
		}
	}
	t.Logf("%d processes, %d IDs; outcomes %v", len(procs), len(all), outcomes)
	require.NotEmpty(t, all, "some process should have printed IDs")
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		require.NotEqual(t, all[i-1], all[i], "ID %d printed twice across processes", all[i])
	}
}

// checkStderr checks what gen p printed on stderr: the library's log
// records, such as its wait for the inherited mark or a lease lost, and,
// if it failed, then its reason on one line, which starts with the
// command. It returns the reason, or "" for a process that finished.
func checkStderr(t *testing.T, p proc) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(p.stderr, "\n"), "\n")
	msg := ""
	if p.code != 0 {
		msg, lines = lines[len(lines)-1], lines[:len(lines)-1]
		assert.True(t, strings.HasPrefix(msg, "ringflake: gen: "), "%v: the reason %q should start with the command", p.args, msg)
	}
	for _, line := range lines {
		if line != "" || p.code != 0 {
			assert.Regexp(t, `^level=(WARN|INFO) msg="ringflake: `, line, "%v: besides its reason, only the library's log records; stderr %q", p.args, p.stderr)
		}
	}
	return msg
}

// reason shortens a refusal to its kind, for the test's log.
func reason(msg string) string {
	for _, k := range []string{"interrupted", "leased", "behind", "not held", "ahead"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	return msg
}

func TestCLINoMachineIDSaysWhy(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	lease := "redis://" + srv.Addr
	// serve holds its ID until it is killed; a gen of many IDs once ran out
	// of them, and released the ID, before the subtests of a busy run.
	holder := exec.Command(bin, "serve", "--lease", lease, "--machine-range", "3-3", "--addr", "127.0.0.1:0")
	require.NoError(t, holder.Start())
	// Cleanup, not defer: a defer would kill the holder before the parallel
	// subtests run, and on a busy machine its lease could run out first.
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	require.Eventually(t, func() bool { return srv.Do("EXISTS", "{ringflake}:LEASE:3") == "1" }, 10*time.Second, 5*time.Millisecond,
		"the holder should take the only ID")

	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		// What follows the store's words is the client's and the system's.
		{"no server", []string{"gen", "--lease", "redis://127.0.0.1:1"}, 1,
			"ringflake: gen: lease redis://127.0.0.1:1: getting the machine ID: machineid_redis: taking a machine ID: "},
		// The other usage errors are in TestRunUsageErrors; these need a server.
		{"range past the layout", []string{"gen", "--lease", lease, "--machine-range", "0-5000"}, 2, "the layout's machine IDs are 0..1023"},
		{"untagged prefix on a cluster", []string{"gen", "--lease", lease + "?prefix=x:&addr=" + srv.Addr}, 2, "valid: one with a hash tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := runCLI(context.Background(), bin, tt.args, 0, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.code, p.code, "exit status; stderr %q", p.stderr)
			assert.Empty(t, p.ids, "stdout should stay empty")
			assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
			assert.Equal(t, 1, strings.Count(p.stderr, "ringflake: "), "want one prefix, got %q", p.stderr)
			assert.Contains(t, p.stderr, tt.msg)
			if tt.code == 1 {
				assert.Contains(t, p.stderr, syscall.ECONNREFUSED.Error(), "the system's own word for the refusal")
			}
			assert.LessOrEqual(t, strings.Count(p.stderr, syscall.ECONNREFUSED.Error()), 1, "the cause is said once: %q", p.stderr)
		})
	}
	// A full range: gen says it waits, through the library's log, and then
	// fails in one line once --acquire-timeout has passed.
	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", lease, "--machine-range", "3-3", "--acquire-timeout", "1s"}, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, p.code, "exit status; stderr %q", p.stderr)
	lines := strings.Split(strings.TrimSuffix(p.stderr, "\n"), "\n")
	require.Len(t, lines, 2, "the wait's record and the error; stderr %q", p.stderr)
	assert.Contains(t, lines[0], `level=WARN msg="ringflake: waiting for a machine ID: every ID in the range is held"`)
	assert.True(t, strings.HasPrefix(lines[1], "ringflake: gen: lease "+lease+": getting the machine ID: "), "the error %q", lines[1])
	assert.Contains(t, lines[1], "machine IDs 3..3 held")
	assert.Contains(t, lines[1], "; waited ")
}

// TestCLIExplainsAWaitForTheMark checks that gen says, through the
// library's log, why it pauses when a fresh Redis makes it wait out the
// restart floor (up to TTL + the clock bound), and then prints its IDs.
func TestCLIExplainsAWaitForTheMark(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	start := time.Now()
	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", "redis://" + srv.Addr, "--lease-ttl", "1500ms", "-n", "2"}, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, p.code, "exit status; stderr %q", p.stderr)
	assert.Len(t, p.ids, 2, "gen should print its IDs once the wait is over")
	assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
	assert.Regexp(t, `^level=WARN msg="ringflake: waiting for the clock to pass the mark the machine ID's lease inherited" machine=0 wait=\d\.\d+s until=\S+ mark=\S+\n$`, p.stderr)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "a fresh Redis should have made gen wait out most of the TTL")
}

// TestCLILeaseURLs runs gen against real servers named each way the usage
// text gives: a database and a prefix, a Cluster, and credentials.
func TestCLILeaseURLs(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	ctx := context.Background()
	gen := func(t *testing.T, url string, wantCode int) proc {
		t.Helper()
		p, err := runCLI(ctx, bin, []string{"gen", "--lease", url, "--lease-ttl", "1s", "-n", "3"}, 0, 0)
		require.NoError(t, err)
		assert.Equal(t, wantCode, p.code, "%s: exit status; stderr %q", url, p.stderr)
		if wantCode == 0 {
			assert.Len(t, p.ids, 3, "%s: IDs printed", url)
		} else {
			assert.Empty(t, p.ids)
			assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "%s: want one line on stderr, got %q", url, p.stderr)
		}
		return p
	}
	t.Run("database and prefix", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		gen(t, "redis://"+srv.Addr+"/3?prefix={cli}:", 0)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 3})
		defer c.Close()
		n, err := c.Exists(ctx, "{cli}:MARKS").Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "the marks should be in database 3 under the prefix")
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t)
		addrs := cl.Addrs()
		gen(t, "redis://"+addrs[0]+"?addr="+addrs[1]+"&addr="+addrs[2], 0)
	})
	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		require.Equal(t, "OK", srv.Do("CONFIG", "SET", "requirepass", "s3cret"))
		p := gen(t, "redis://:wrong@"+srv.Addr, 1)
		assert.Contains(t, p.stderr, "WRONGPASS")
		assert.Contains(t, p.stderr, "redis://:xxxxx@"+srv.Addr, "the URL is shown without its password")
		assert.NotContains(t, p.stderr, "wrong@")
		p = gen(t, "redis://"+srv.Addr, 1)
		assert.Contains(t, p.stderr, "unauthenticated", "Redis's answer to a client that did not authenticate")
		gen(t, "redis://:s3cret@"+srv.Addr, 0)
	})
}

// TestCLIMaxClockOffsetReachesTheStore runs gen with a clock 1s ahead of
// the Redis server's: refused at once with --max-clock-offset 500ms, in
// one line that names the clock and the bound, and accepted at the
// default bound of 2s.
func TestCLIMaxClockOffsetReachesTheStore(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	args := []string{"gen", "--lease", "redis://" + srv.Addr, "--lease-ttl", "1s", "--clock-offset", "1s", "-n", "2"}
	p, err := runCLI(context.Background(), bin, append(args, "--max-clock-offset", "500ms"), 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, p.code, "stderr %q", p.stderr)
	assert.Empty(t, p.ids)
	assert.Contains(t, p.stderr, "machineid: the clock is off the fleet's: this process's clock is ")
	assert.Contains(t, p.stderr, "s ahead of Redis's clock (TIME) (±")
	assert.Contains(t, p.stderr, "at most 500ms is allowed")
	assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)

	p, err = runCLI(context.Background(), bin, args, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, p.code, "stderr %q", p.stderr)
	assert.Len(t, p.ids, 2, "a clock within the default bound should be accepted")
}

// TestCLIWaitsForAFreeID holds the only ID of a range with a gen killed by
// SIGKILL, which leaves its lease to expire: a newcomer gen with the
// default acquire timeout waits, saying so once, and issues once the lease
// has expired; serve, meanwhile, answers /readyz with 503 and the store's
// account of the holder.
func TestCLIWaitsForAFreeID(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	srv.WaitUptime(6 * time.Second) // past the restart floor (TTL 2s + twice the bound of 2s)
	lease := "redis://" + srv.Addr
	holder := exec.Command(bin, "gen", "--lease", lease, "--machine-range", "0-0", "--lease-ttl", "2s", "-n", "1000000000000")
	out, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the holder should print an ID")

	s := startServerUntil(t, "ringflake: listening", "--lease", lease, "--machine-range", "0-0", "--lease-ttl", "2s")
	require.Eventually(t, func() bool {
		r, err := get(s.addr, "/readyz")
		return err == nil && r.code == 503 && strings.Contains(r.body, "machine IDs 0..0 held, each by a lease under the prefix")
	}, 10*time.Second, 20*time.Millisecond, "serve's /readyz should say why it waits")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "a stop while serve waits; log %v", s.log())

	// The newcomer starts while the holder still renews, and the holder is
	// killed once the newcomer says it waits: started after the kill, a
	// newcomer slow to start on a loaded machine (6.6 s under a CPU hog)
	// found the lease already expired, and had nothing to wait for.
	newcomer, stdout, stderr, exited := startGen(t, "--lease", lease, "--machine-range", "0-0", "--lease-ttl", "2s", "-n", "3")
	waiting := `msg="ringflake: waiting for a machine ID: every ID in the range is held"`
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), waiting) }, 30*time.Second, 10*time.Millisecond,
		"the newcomer should say that it waits; stderr %q", stderr.String())
	require.NoError(t, holder.Process.Kill()) // SIGKILL: nothing is released
	killed := time.Now()
	code := waitExit(t, newcomer, exited, 30*time.Second, stderr)
	assert.Equal(t, 0, code, "the newcomer should issue once the killed holder's lease expired; stderr %q", stderr.String())
	assert.Len(t, strings.Fields(stdout.String()), 3)
	assert.Equal(t, 1, strings.Count(stderr.String(), waiting), "the newcomer says once that it waits; stderr %q", stderr.String())
	t.Logf("the newcomer issued %v after the holder was killed; stderr %q", time.Since(killed).Round(time.Millisecond), stderr.String())
}

// TestCLIClosedPipeReleasesLease runs gen into a reader that stops after
// one line (gen | head -1): gen must end quietly with status 141 and
// release its lease, so that the next process gets the same ID at once
// rather than fail while a leaked lease lives out its TTL. The server is
// up for a TTL first, so that no restart floor delays either process.
func TestCLIClosedPipeReleasesLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := redistest.Start(t)
	srv.WaitUptime(7 * time.Second) // the restart floor: TTL + twice the clock bound of 2s
	args := []string{"gen", "--lease", "redis://" + srv.Addr, "--machine-range", "5-5", "--lease-ttl", "3s"}
	cmd := exec.Command(bin, append(args, "-n", "100000000")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "gen should print an ID")
	require.NoError(t, out.Close())
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "gen should fail once nobody reads its output")
	assert.Equal(t, 141, ee.ExitCode(), "exit status after a closed pipe; a negative one means killed by SIGPIPE, lease held")
	assert.Empty(t, stderr.String(), "a closed pipe is a normal end: nothing on stderr")

	p, err := runCLI(context.Background(), bin, append(args, "-n", "1"), 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, p.code, "the next process should get ID 5 at once; stderr %q", p.stderr)
	require.Len(t, p.ids, 1)
	first, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, p.ids[0], first, "the next holder's ID comes after the last one printed")
}
