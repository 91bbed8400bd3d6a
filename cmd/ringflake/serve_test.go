package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/internal/redistest"
)

// server is one "ringflake serve" process on a free loopback port.
type server struct {
	addr    string // host:port it serves on
	machine int64  // its machine ID, from its start record
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // written before exited is closed

	mu      sync.Mutex // protects records
	records []map[string]any
}

// startServer starts the binary's serve command with args on a free port,
// logging JSON, and returns once it logs that it serves. It is killed when
// the test ends if it is still running.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return startServerUntil(t, "ringflake: serving", args...)
}

// startServerUntil is startServer, returning once the process logs the
// record msg ("ringflake: listening", say) rather than that it serves.
func startServerUntil(t *testing.T, msg string, args ...string) *server {
	t.Helper()
	bin := buildCLI(t)
	s := &server{exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	serving := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				rec = map[string]any{"msg": "(not JSON) " + sc.Text()}
			}
			s.mu.Lock()
			s.records = append(s.records, rec)
			s.mu.Unlock()
			if rec["msg"] == msg {
				serving <- rec
			}
		}
		s.waitErr = s.cmd.Wait() // after stderr is read to its end
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	select {
	case rec := <-serving:
		s.addr, _ = rec["addr"].(string)
		m, _ := rec["machine"].(float64)
		s.machine = int64(m)
	case <-s.exited:
		t.Fatalf("serve exited before serving: %v; log: %v", s.waitErr, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not log %q within 30s; log: %v", msg, s.log())
	}
	return s
}

// log returns the records logged so far.
func (s *server) log() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.records...)
}

// messages returns the msg of every record logged so far.
func (s *server) messages() []string {
	var msgs []string
	for _, r := range s.log() {
		msg, _ := r["msg"].(string)
		msgs = append(msgs, msg)
	}
	return msgs
}

// stop sends sig and returns the exit status, failing the test if the
// process has not exited within 20s.
func (s *server) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not exit within 20s of %v; log: %v", sig, s.log())
	}
	return s.cmd.ProcessState.ExitCode()
}

// readyz is /readyz's answer, as a client reads it.
type readyz struct {
	Ready   bool   `json:"ready"`
	Machine int64  `json:"machine"`
	Reason  string `json:"reason"`
}

// reply is one HTTP answer, read in full.
type reply struct {
	code   int
	header http.Header
	body   string
}

// client reuses its connections, as a service's callers do.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// get sends GET http://addr+path and reads the whole answer.
func get(addr, path string) (reply, error) {
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("reading the body of %s: %w", path, err)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: string(b)}, nil
}

// status returns the status of GET path, or 0 on a transport error. It
// is for conditions polled on another goroutine, where a test must not
// fail.
func status(addr, path string) int {
	r, _ := get(addr, path)
	return r.code
}

// mustGet is get, failing the test on a transport error.
func mustGet(t *testing.T, addr, path string) reply {
	t.Helper()
	r, err := get(addr, path)
	require.NoError(t, err, "GET %s", path)
	return r
}

// The process answers every endpoint, logs one record when it starts and
// one when it stops, nothing per request, and exits 0 on SIGINT (SIGTERM
// in the tests below).
func TestServeProcess(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--machine-id", "7", "--max-batch", "1000")
	assert.Equal(t, int64(7), s.machine)

	r := mustGet(t, s.addr, "/api/snowflake/get/orders")
	assert.Equal(t, 200, r.code)
	leaf, err := ringflake.ParseID(r.body)
	require.NoError(t, err, "Leaf's answer is the decimal ID alone: %q", r.body)

	r = mustGet(t, s.addr, "/v1/id")
	assert.Equal(t, 200, r.code)
	var one struct{ ID ringflake.ID }
	require.NoError(t, json.Unmarshal([]byte(r.body), &one), "body %q", r.body)

	r = mustGet(t, s.addr, "/v1/ids?n=1000")
	assert.Equal(t, 200, r.code)
	var batch struct{ IDs []ringflake.ID }
	require.NoError(t, json.Unmarshal([]byte(r.body), &batch))
	assert.Len(t, batch.IDs, 1000)
	all := append([]ringflake.ID{leaf, one.ID}, batch.IDs...)
	for i := 1; i < len(all); i++ {
		assert.Greater(t, all[i], all[i-1], "IDs of one process come in increasing order")
	}
	assert.Equal(t, 400, mustGet(t, s.addr, "/v1/ids?n=1001").code, "above --max-batch")

	r = mustGet(t, s.addr, "/v1/decode/"+one.ID.String())
	assert.Equal(t, 200, r.code)
	var parts struct {
		ID       ringflake.ID
		Time     time.Time
		Machine  int64
		Sequence int64
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &parts))
	assert.Equal(t, one.ID, parts.ID)
	assert.Equal(t, int64(7), parts.Machine)
	assert.WithinDuration(t, time.Now(), parts.Time, 10*time.Second)

	r = mustGet(t, s.addr, "/metrics")
	assert.Equal(t, 200, r.code)
	assert.Contains(t, r.body, "\nringflake_ids_issued_total 1002\n")
	assert.Contains(t, r.body, "\nringflake_machine_id 7\n")
	assert.Equal(t, reply{200, nil, "{\"status\":\"ok\"}\n"}, stripHeader(mustGet(t, s.addr, "/healthz")))
	assert.Equal(t, reply{200, nil, "{\"ready\":true,\"machine\":7}\n"}, stripHeader(mustGet(t, s.addr, "/readyz")))
	r = mustGet(t, s.addr, "/v2/id")
	assert.Equal(t, 404, r.code)
	assert.JSONEq(t, `{"error":"no such path \"/v2/id\"; see ringflake serve -h"}`, r.body)
	resp, err := client.Post("http://"+s.addr+"/v1/id", "text/plain", nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 405, resp.StatusCode)
	assert.JSONEq(t, `{"error":"method POST; want GET or HEAD"}`, string(b))

	// HTTP's conventions: HEAD wherever GET, issuing nothing; JSON for
	// net/http's own 431.
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/v1/id", "/v1/ids?n=1000", "/api/snowflake/get/k"} {
		resp, err := client.Head("http://" + s.addr + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, "HEAD %s", path)
	}
	assert.Contains(t, mustGet(t, s.addr, "/metrics").body, "\nringflake_ids_issued_total 1002\n", "HEAD issued nothing")
	r = mustGet(t, s.addr, "/v1/decode/"+strings.Repeat("1", 64<<10))
	assert.Equal(t, 431, r.code, "a 64 KB URL")
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.JSONEq(t, `{"error":"431 Request Header Fields Too Large"}`, r.body)
	r = mustGet(t, s.addr, "//v1/./id")
	assert.Equal(t, 200, r.code, "an unclean path is served clean; body %s", r.body)

	assert.Equal(t, 0, s.stop(t, syscall.SIGINT), "exit status after SIGINT; log %v", s.log())
	// The state file's lease (a TTL of 0.5 s) may be lost and regained
	// when a loaded machine starves the process for longer than its margin
	// (a CPU hog did, between listening and serving): records of that come
	// between these, and are not what this checks.
	msgs := slices.DeleteFunc(s.messages(), func(m string) bool {
		return m == "ringflake: machine ID lease lost" || m == "ringflake: machine ID lease regained"
	})
	assert.Equal(t, []string{"ringflake: listening", "ringflake: serving", "ringflake: stopped"}, msgs,
		"one record when it listens, one when it serves and one at the stop")
	log := s.log()
	stopped := log[slices.IndexFunc(log, func(r map[string]any) bool { return r["msg"] == "ringflake: stopped" })]
	assert.Equal(t, true, stopped["drained"])
	assert.Equal(t, true, stopped["released"], "the fixed machine ID's state file, given up")
	assert.Equal(t, float64(1003), stopped["issued"], "the IDs of the GETs, the unclean path's included")
	took, ok := stopped["took"].(string)
	require.True(t, ok, "took is a duration as text, not nanoseconds: %v", stopped["took"])
	_, err = time.ParseDuration(took)
	assert.NoError(t, err, "took %q", took)
}

// Started against a fresh Redis, whose restart floor makes New wait up to
// a TTL, serve answers /healthz at once, and /readyz and the ID endpoints
// with 503 and the reason, until it can issue; then it serves. The floor
// runs from Redis's start, so its TTL is long enough that a busy machine
// still has serve listening well before the floor has passed (with 3s, a
// loaded run once saw the last of the 503s turn to 200).
func TestServeAnswersWhileItGetsItsMachineID(t *testing.T) {
	t.Parallel()
	buildCLI(t) // before Redis starts its floor: a build can outlast it
	srv := redistest.Start(t)
	s := startServerUntil(t, "ringflake: listening", "--lease", "redis://"+srv.Addr, "--lease-ttl", "8s")
	r := mustGet(t, s.addr, "/healthz")
	assert.Equal(t, 200, r.code, "/healthz from the moment the port is open")
	r = mustGet(t, s.addr, "/readyz")
	require.Equal(t, 503, r.code, "not ready while New waits out the fresh Redis's floor; body %s", r.body)
	var ready readyz
	require.NoError(t, json.Unmarshal([]byte(r.body), &ready))
	assert.Regexp(t, `^(acquiring the machine ID from the lease redis://127\.0\.0\.1:\d+|starting with machine ID 0 from the lease redis://127\.0\.0\.1:\d+, once the clock has passed the mark it inherited, .*)$`, ready.Reason)
	r = mustGet(t, s.addr, "/v1/id")
	assert.Equal(t, 503, r.code)
	assert.Contains(t, r.body, `"error":"not ready: `)
	assert.Equal(t, 503, mustGet(t, s.addr, "/api/snowflake/get/k").code)

	require.Eventually(t, func() bool { return status(s.addr, "/readyz") == 200 }, 40*time.Second, 20*time.Millisecond,
		"ready once the floor (a TTL) has passed")
	assert.Equal(t, 200, mustGet(t, s.addr, "/v1/id").code)
	assert.Contains(t, s.messages(), "ringflake: serving")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
}

// A SIGTERM while serve waits for its machine ID stops it there: exit 0,
// and the lease it took released, not held for a TTL. Meanwhile the ID
// endpoints' and /readyz's 503 say how long to wait in Retry-After: until
// the clock passes the fresh Redis's floor, a TTL (20s) from its start,
// rounded up to whole seconds. The stop is logged at INFO, not as a lease
// lost: the release is serve's own.
func TestServeSIGTERMWhileGettingItsMachineID(t *testing.T) {
	t.Parallel()
	buildCLI(t) // before Redis starts its floor: a build can outlast it
	srv := redistest.Start(t)
	s := startServerUntil(t, "ringflake: listening", "--lease", "redis://"+srv.Addr, "--lease-ttl", "20s")
	require.Eventually(t, func() bool { return srv.Do("EXISTS", "{ringflake}:LEASE:0") == "1" }, 10*time.Second, 10*time.Millisecond,
		"the lease on machine ID 0 is taken while New waits out the floor")
	var mark time.Time
	require.Eventually(t, func() bool {
		r, err := get(s.addr, "/readyz")
		var ready readyz
		if err != nil || r.code != 503 || json.Unmarshal([]byte(r.body), &ready) != nil {
			return false
		}
		_, at, ok := strings.Cut(ready.Reason, "once the clock has passed the mark it inherited, ")
		mark, err = time.Parse(time.RFC3339Nano, at)
		return ok && err == nil
	}, 10*time.Second, 10*time.Millisecond, "/readyz names the mark it waits for")
	for _, path := range []string{"/v1/id", "/v1/ids?n=3", "/readyz"} {
		before := time.Now()
		r := mustGet(t, s.addr, path)
		after := time.Now()
		require.Equal(t, 503, r.code, "%s: still waiting: the floor is a 20s TTL; body %s", path, r.body)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err, "%s: Retry-After %q", path, r.header.Get("Retry-After"))
		lo, hi := int(math.Ceil(mark.Sub(after).Seconds())), int(math.Ceil(mark.Sub(before).Seconds()))
		assert.True(t, lo <= retry && retry <= hi, "%s: Retry-After %d; want the %v to %v left until the mark, rounded up", path, retry, mark.Sub(after), mark.Sub(before))
		assert.GreaterOrEqual(t, retry, 5, "%s: a floor of 20s is more than 5s away for a while", path)
	}
	sent := len(s.log())
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
	assert.Equal(t, "0", srv.Do("EXISTS", "{ringflake}:LEASE:0"), "the lease is released at exit")
	msgs := s.messages()
	assert.Equal(t, "ringflake: stopped before serving", msgs[len(msgs)-1])
	assert.Equal(t, true, s.log()[len(msgs)-1]["released"])
	assert.NotContains(t, msgs, "ringflake: machine ID lease lost", "a stop is no lease lost")
	for _, rec := range s.log()[sent:] {
		assert.Equal(t, "INFO", rec["level"], "after the SIGTERM: %v", rec)
	}
}

// TestServeSIGTERMWhileWaitingOutTheStateFilesMark starts serve on a fixed
// machine ID whose state file holds a mark 25s ahead of its clock: it
// listens, /healthz answers and /readyz says why it is not ready while it
// waits, and SIGTERM stops it at once (it once waited the mark out first,
// with no port open).
func TestServeSIGTERMWhileWaitingOutTheStateFilesMark(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := invoke("gen", "-n", "1", "--machine-id", "9", "--state-dir", dir)
	require.Equal(t, 0, code, "stderr %q", stderr)
	s := startServerUntil(t, "ringflake: listening", "--machine-id", "9", "--state-dir", dir, "--clock-offset", "-25s")
	require.Equal(t, 200, status(s.addr, "/healthz"))
	require.Eventually(t, func() bool {
		r, err := get(s.addr, "/readyz")
		return err == nil && r.code == 503 && strings.Contains(r.body, "mark")
	}, 10*time.Second, 10*time.Millisecond, "/readyz says it waits out the mark")
	start := time.Now()
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
	assert.Less(t, time.Since(start), 15*time.Second, "SIGTERM ends the wait, not the mark 25s ahead")
	msgs := s.messages()
	assert.Equal(t, "ringflake: stopped before serving", msgs[len(msgs)-1])
}

func stripHeader(r reply) reply { r.header = nil; return r }

// serve --layout js issues IDs below 2^53, as JSON numbers, and decodes
// under the same layout.
func TestServeLayoutJS(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--layout", "js", "--machine-id", "63", "--state-dir", t.TempDir())
	r := mustGet(t, s.addr, "/v1/ids?n=1000")
	require.Equal(t, 200, r.code, "body %s", r.body)
	assert.Regexp(t, `^\{"ids":\[[0-9]+(,[0-9]+){999}\]\}\n$`, r.body, "JSON numbers")
	ids, err := parseIDs("/v1/ids", r.body)
	require.NoError(t, err)
	require.Len(t, ids, 1000)
	js := ringflake.JSLayout()
	for _, id := range ids {
		require.Less(t, id, ringflake.ID(1<<53), "ID %d", id)
		require.Equal(t, int64(63), js.Decompose(id).Machine, "ID %d", id)
	}
	r = mustGet(t, s.addr, "/v1/decode/"+ids[0].Base32())
	require.Equal(t, 200, r.code, "body %s", r.body)
	assert.Contains(t, r.body, `"machine":63,`)
	r = mustGet(t, s.addr, "/v1/decode/383078035417174017")
	assert.Equal(t, 400, r.code, "an ID of the default layout")
	assert.Contains(t, r.body, "the largest ID of the layout")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
}

// TestServeLeaseLost serves with a Redis lease and stops Redis: requests
// get a 503 that names the cause and /readyz says why it is not ready;
// once Redis is back the process regains a lease and serves again, logging
// both changes; on SIGTERM it releases the lease at once.
func TestServeLeaseLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := startServer(t, "--lease", "redis://"+srv.Addr, "--lease-ttl", "1s", "--max-wait", "20ms")
	r := mustGet(t, s.addr, "/readyz")
	require.Equal(t, 200, r.code, "ready once serving; body %s", r.body)
	assert.Equal(t, 200, mustGet(t, s.addr, "/v1/id").code)

	srv.Stop()
	require.Eventually(t, func() bool { return status(s.addr, "/v1/id") == 503 }, 10*time.Second, 20*time.Millisecond,
		"requests should fail once the lease runs out (TTL less the margin)")
	r = mustGet(t, s.addr, "/v1/id")
	assert.Equal(t, 503, r.code)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Contains(t, r.body, `"error":"machineid: lease lost: no renewal of machine ID 0 was confirmed within TTL 1s`)
	assert.Contains(t, r.body, "the latest call: machineid_redis: renewing machine ID 0: ", "the store's error is the cause")
	assert.Equal(t, 1, strings.Count(r.body, "lease lost"), "said once: %s", r.body)
	r = mustGet(t, s.addr, "/readyz")
	assert.Equal(t, 503, r.code)
	var ready readyz
	require.NoError(t, json.Unmarshal([]byte(r.body), &ready))
	assert.False(t, ready.Ready)
	assert.Contains(t, ready.Reason, "machineid: lease lost: ")
	assert.Equal(t, "1", r.header.Get("Retry-After"), "/readyz's Retry-After comes from Ready")
	assert.Equal(t, 503, mustGet(t, s.addr, "/v1/ids?n=10").code)
	assert.Equal(t, 200, mustGet(t, s.addr, "/healthz").code, "the process is up all the same")

	srv.Restart()
	require.Eventually(t, func() bool { return status(s.addr, "/readyz") == 200 }, 20*time.Second, 50*time.Millisecond,
		"the process should regain a lease once Redis is back (after the restarted Redis's floor, a TTL)")
	r = mustGet(t, s.addr, "/readyz")
	require.NoError(t, json.Unmarshal([]byte(r.body), &ready))
	assert.Equal(t, 200, mustGet(t, s.addr, "/v1/id").code)
	assert.Contains(t, s.messages(), "ringflake: machine ID lease lost")
	assert.Contains(t, s.messages(), "ringflake: machine ID lease regained")

	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
	assert.Equal(t, "0", srv.Do("EXISTS", "{ringflake}:LEASE:"+strconv.FormatInt(ready.Machine, 10)),
		"the lease on machine ID %d should be released at exit", ready.Machine)
}

// outcome counts what happened to the requests of a load.
type outcome struct {
	ok, refused, failed atomic.Int64
	drained             atomic.Int64 // answered with 200 after the signal, having started before it
	firstFailure        atomic.Value // string
}

// TestServeDrainsOnSIGTERM sends SIGTERM to a process under load from many
// clients: every request gets a whole 200 answer, or, once the listener is
// closed, a refused connection; none fails part way. The IDs are all
// distinct, the process exits 0, and its lease is free in Redis at once.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := startServer(t, "--lease", "redis://"+srv.Addr, "--lease-ttl", "2s")
	const clients = 32
	paths := []string{"/v1/id", "/api/snowflake/get/k", "/v1/ids?n=50"}
	var (
		out      outcome
		signaled atomic.Int64 // UnixNano of the signal, 0 before
		mu       sync.Mutex
		ids      []ringflake.ID
	)
	deadline := time.Now().Add(30 * time.Second) // bounds the load whatever happens
	var eg errgroup.Group
	for c := range clients {
		eg.Go(func() error {
			for i := 0; time.Now().Before(deadline); i++ {
				path := paths[(c+i)%len(paths)]
				began := time.Now().UnixNano()
				r, err := get(s.addr, path)
				switch {
				case errors.Is(err, syscall.ECONNREFUSED):
					out.refused.Add(1)
					return nil // the listener is closed: the process is stopping
				case err != nil || r.code != 200:
					out.failed.Add(1)
					out.firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %v %d %q", path, err, r.code, r.body))
					continue
				}
				got, perr := parseIDs(path, r.body)
				if perr != nil {
					out.failed.Add(1)
					out.firstFailure.CompareAndSwap(nil, perr.Error())
					continue
				}
				out.ok.Add(1)
				if sig := signaled.Load(); sig != 0 && began < sig {
					out.drained.Add(1)
				}
				mu.Lock()
				ids = append(ids, got...)
				mu.Unlock()
			}
			return nil
		})
	}
	require.Eventually(t, func() bool { return out.ok.Load() >= 3000 }, 20*time.Second, time.Millisecond, "the load should get going")
	signaled.Store(time.Now().UnixNano())
	code := s.stop(t, syscall.SIGTERM)
	exists := srv.Do("EXISTS", "{ringflake}:LEASE:"+strconv.FormatInt(s.machine, 10)) // at once
	require.NoError(t, eg.Wait())
	t.Logf("%d answered (%d of them started before the signal and answered after it), %d refused, %d failed",
		out.ok.Load(), out.drained.Load(), out.refused.Load(), out.failed.Load())

	assert.Zero(t, out.failed.Load(), "requests that failed part way; first: %v", out.firstFailure.Load())
	assert.Equal(t, int64(clients), out.refused.Load(), "every client should end on a refused connection")
	assert.Positive(t, out.drained.Load(), "requests in flight at the signal should have been answered")
	assert.Equal(t, 0, code, "exit status; log %v", s.log())
	assert.Equal(t, "0", exists, "the lease on machine ID %d should be free when the process has exited", s.machine)
	seen := make(map[ringflake.ID]bool, len(ids))
	for _, id := range ids {
		require.False(t, seen[id], "ID %d handed out twice", id)
		seen[id] = true
	}
	msgs := s.messages()
	require.NotEmpty(t, msgs)
	stopped := s.log()[len(msgs)-1]
	assert.Equal(t, "ringflake: stopped", stopped["msg"])
	assert.Equal(t, true, stopped["drained"])
	assert.Equal(t, true, stopped["released"])
	assert.GreaterOrEqual(t, stopped["issued"], float64(len(ids)), "the IDs issued include every one answered")
}

// parseIDs reads the IDs of a 200 answer of path.
func parseIDs(path, body string) ([]ringflake.ID, error) {
	switch {
	case strings.HasPrefix(path, "/api/"):
		id, err := ringflake.ParseID(body)
		return []ringflake.ID{id}, err
	case strings.HasPrefix(path, "/v1/ids"):
		var b struct{ IDs []ringflake.ID }
		err := json.Unmarshal([]byte(body), &b)
		if err == nil && len(b.IDs) == 0 {
			err = fmt.Errorf("%s: no IDs in %q", path, body)
		}
		return b.IDs, err
	}
	var b struct{ ID ringflake.ID }
	err := json.Unmarshal([]byte(body), &b)
	return []ringflake.ID{b.ID}, err
}

// A taken port is one line on stderr and status 1, before any lease is
// taken.
func TestServeAddrInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	code, stdout, stderr := invoke("serve", "--addr", l.Addr().String(), "--lease", "redis://127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "ringflake: serve: listen tcp "+l.Addr().String()+": bind: address already in use\n", stderr)
}

// serve takes its machine ID from etcd and from PostgreSQL as gen does:
// ready with the leased ID, and the lease released at exit.
func TestServeLeaseStores(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) (url string, held func() []int64)
	}{
		{"etcd", func(t *testing.T) (string, func() []int64) {
			cl := etcdtest.Start(t)
			return "etcd://" + strings.TrimPrefix(cl.Endpoints()[0], "http://"), func() []int64 { return etcdOwners(t, cl) }
		}},
		{"postgres", func(t *testing.T) (string, func() []int64) {
			pg := pgtest.Start(t)
			return pg.AddRole("ringflake", "s3cret"), func() []int64 { return pgOwners(t, pg) }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, held := tt.start(t)
			s := startServer(t, "--lease", url, "--lease-ttl", "2s")
			r := mustGet(t, s.addr, "/readyz")
			assert.Equal(t, 200, r.code, "body %s", r.body)
			assert.JSONEq(t, `{"ready":true,"machine":`+strconv.FormatInt(s.machine, 10)+`}`, r.body)
			assert.Equal(t, []int64{s.machine}, held(), "the served machine ID is the one leased")
			var one struct{ ID ringflake.ID }
			require.NoError(t, json.Unmarshal([]byte(mustGet(t, s.addr, "/v1/id").body), &one))
			assert.Equal(t, s.machine, ringflake.DefaultLayout().Decompose(one.ID).Machine)
			assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
			assert.Empty(t, held(), "the lease released at exit")
		})
	}
}

// TestServeNoStateFileReleasesNothing serves a plain fixed machine ID: its
// stop log says nothing of a release, as there is nothing to give up.
func TestServeNoStateFileReleasesNothing(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--machine-id", "8", "--no-state-file")
	assert.Equal(t, 200, mustGet(t, s.addr, "/v1/id").code)
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
	msgs := s.messages()
	require.Equal(t, "ringflake: stopped", msgs[len(msgs)-1])
	assert.NotContains(t, s.log()[len(msgs)-1], "released", "a plain fixed machine ID has no lease to release")
}

// TestServeStaysUpWhileItsStoreIsDown starts serve with its Redis down. It
// stays up: /healthz answers 200, and /readyz 503 with the store's error,
// said once, how serve goes on, a Retry-After, and no machine ID; the
// failure is logged once however often serve asks again. Once Redis is up on
// that port, serve takes its machine ID and serves, with no exit. A second
// serve, on a port where nothing ever answers, stops at once on SIGTERM
// while it waits to ask again, with exit 0: it holds nothing.
func TestServeStaysUpWhileItsStoreIsDown(t *testing.T) {
	t.Parallel()
	buildCLI(t)
	srv := redistest.Start(t)
	srv.Stop()
	s := startServerUntil(t, "ringflake: listening", "--lease", "redis://"+srv.Addr, "--lease-ttl", "1s", "--max-clock-offset", "500ms")
	assert.Equal(t, 200, mustGet(t, s.addr, "/healthz").code, "/healthz while the store is down")
	var r reply
	var ready readyz
	require.Eventually(t, func() bool {
		var err error
		r, err = get(s.addr, "/readyz")
		return err == nil && json.Unmarshal([]byte(r.body), &ready) == nil && strings.HasPrefix(ready.Reason, "no machine ID yet: ")
	}, 20*time.Second, 10*time.Millisecond, "/readyz says the store cannot be reached")
	assert.Equal(t, 503, r.code)
	assert.NotContains(t, r.body, `"machine"`, "no machine ID to report: %s", r.body)
	assert.Contains(t, ready.Reason, "connect: connection refused")
	assert.Equal(t, 1, strings.Count(ready.Reason, "connection refused"), "the cause is said once: %s", ready.Reason)
	assert.Contains(t, ready.Reason, "; serve asks again, backing off up to every 10s")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
	assert.True(t, 1 <= retry && retry <= 10, "Retry-After %d: the time until serve asks again, rounded up", retry)
	id := mustGet(t, s.addr, "/v1/id")
	assert.Equal(t, 503, id.code, "no IDs meanwhile: %s", id.body)
	assert.Contains(t, id.body, "not ready: no machine ID yet: ")

	// Another serve, on a dead port, stops at once on SIGTERM.
	dead := startServerUntil(t, "ringflake: listening", "--lease", "redis://127.0.0.1:1")
	require.Eventually(t, func() bool {
		return strings.Contains(mustGet(t, dead.addr, "/readyz").body, "no machine ID yet: ")
	}, 20*time.Second, 10*time.Millisecond, "the second serve fails to reach its store")
	sent := time.Now()
	assert.Equal(t, 0, dead.stop(t, syscall.SIGTERM), "a stop while serve waits to ask again; log %v", dead.log())
	t.Logf("the second serve exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	msgs := dead.messages()
	assert.Equal(t, "ringflake: stopped before serving", msgs[len(msgs)-1])

	srv.Restart()
	require.Eventually(t, func() bool { return status(s.addr, "/readyz") == 200 }, 40*time.Second, 20*time.Millisecond,
		"ready once the store answers, and its fresh floor (1.5s) has passed; log %v", s.log())
	select {
	case <-s.exited:
		t.Fatalf("serve exited: %v; log %v", s.waitErr, s.log())
	default:
	}
	batch := mustGet(t, s.addr, "/v1/ids?n=3")
	require.Equal(t, 200, batch.code, "IDs once ready: %s", batch.body)
	ids, err := parseIDs("/v1/ids?n=3", batch.body)
	require.NoError(t, err)
	assert.Len(t, ids, 3)
	// Each failure is logged once: again only when its words change (a
	// release that timed out rather than was refused, say), never per try.
	said := map[string]bool{}
	for _, rec := range s.log() {
		if rec["msg"] == "ringflake: no machine ID yet; asking again, backing off up to every 10s" {
			err, _ := rec["err"].(string)
			assert.False(t, said[err], "the failure %q is logged twice: %v", err, s.log())
			said[err] = true
		}
	}
	assert.NotEmpty(t, said, "the failure is logged")
	assert.Contains(t, s.messages(), "ringflake: serving")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
}
