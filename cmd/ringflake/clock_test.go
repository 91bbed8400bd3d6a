package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/internal/redistest"
)

// TestCLIFleetClock runs, on each store with a reference clock, a fleet
// member holding machine ID 0 of 0..7 (on etcd three, the fewest whose
// clocks refuse anyone: docs/machineid_etcd.md), and then newcomers whose clocks are
// 30s ahead and 30s behind (--clock-offset): each is refused at once, in
// one line that names the store's clock and says which way and by how
// much. A newcomer on the fleet's clock then issues at once: no refused
// one left a mark to wait out. --clock-offset reaches the Holder of every
// store, those the command wraps (etcd's, PostgreSQL's) included.
func TestCLIFleetClock(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	redisURL := "redis://" + redistest.Start(t).Addr
	var hosts []string
	for _, u := range etcdtest.Start(t).Endpoints() {
		hosts = append(hosts, strings.TrimPrefix(u, "http://"))
	}
	kube := k8stest.Start(t)
	kube.CreateNamespace("clock")
	for _, tt := range []struct {
		store, url, reference string
		env                   []string
		members               int
	}{
		{"redis", redisURL, "Redis's clock (TIME)", os.Environ(), 1},
		{"etcd", "etcd://" + strings.Join(hosts, ","), "the median of 3 live holders' clocks", os.Environ(), 3},
		{"postgres", pgtest.Start(t).DSN(), "PostgreSQL's clock", os.Environ(), 1},
		{"k8s", "k8s://clock", "the API server's clock", k8sEnv(t, "KUBECONFIG="+kube.Kubeconfig(k8stest.Admin)), 1},
	} {
		t.Run(tt.store, func(t *testing.T) {
			t.Parallel()
			args := []string{"gen", "--lease", tt.url, "--machine-range", "0-7", "--lease-ttl", "2s"}
			for range tt.members {
				fleet := exec.Command(bin, append(args, "-n", "1000000000000")...)
				fleet.Env = tt.env
				out, err := fleet.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, fleet.Start())
				t.Cleanup(func() { _ = fleet.Process.Kill(); _ = fleet.Wait() })
				_, err = bufio.NewReader(out).ReadString('\n')
				require.NoError(t, err, "the fleet member should issue")
			}

			for _, off := range []struct{ flag, way string }{{"30s", "ahead of"}, {"-30s", "behind"}} {
				start := time.Now()
				p, err := runCLIEnv(context.Background(), bin, tt.env, append(args, "-n", "1", "--clock-offset", off.flag), 0, 0)
				require.NoError(t, err)
				assert.Equal(t, 1, p.code, "a newcomer %s: stderr %q", off.flag, p.stderr)
				assert.Less(t, time.Since(start), 10*time.Second, "refused at once")
				assert.Empty(t, p.ids)
				assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "one line: %q", p.stderr)
				assert.Contains(t, p.stderr, "machineid: the clock is off the fleet's: this process's clock is ")
				assert.Contains(t, p.stderr, "s "+off.way+" "+tt.reference+" (±")
			}
			start := time.Now()
			p, err := runCLIEnv(context.Background(), bin, tt.env, append(args, "-n", "1"), 0, 0)
			require.NoError(t, err)
			assert.Equal(t, 0, p.code, "a newcomer on the fleet's clock: stderr %q", p.stderr)
			assert.Len(t, p.ids, 1)
			assert.Less(t, time.Since(start), 10*time.Second, "no mark of a refused clock to wait out")
			t.Logf("%s: the newcomer on the fleet's clock issued in %v", tt.store, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestServeReportsAClockOffTheFleets starts serve on a Redis lease with its
// clock 30s ahead of Redis's. New refuses it at once, as gen's is; serve
// stays up, unready, and says why on /readyz, with a Retry-After no longer
// than the time until it asks again, since NTP may set the clock right
// meanwhile. It never holds a mark ahead, and SIGTERM stops it with exit 0.
func TestServeReportsAClockOffTheFleets(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := startServerUntil(t, "ringflake: listening", "--lease", "redis://"+srv.Addr, "--clock-offset", "30s")
	var r reply
	var ready readyz
	require.Eventually(t, func() bool {
		var err error
		r, err = get(s.addr, "/readyz")
		return err == nil && json.Unmarshal([]byte(r.body), &ready) == nil && strings.HasPrefix(ready.Reason, "refused: ")
	}, 20*time.Second, 10*time.Millisecond, "/readyz reports the refusal")
	assert.Equal(t, 503, r.code)
	assert.False(t, ready.Ready)
	assert.Contains(t, ready.Reason, "machineid: the clock is off the fleet's: this process's clock is ")
	assert.Contains(t, ready.Reason, "s ahead of Redis's clock (TIME)")
	assert.Contains(t, ready.Reason, "serve asks again every 5s")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
	assert.True(t, 1 <= retry && retry <= 5, "Retry-After %d: the time until serve asks again, rounded up", retry)
	id := mustGet(t, s.addr, "/v1/id")
	assert.Equal(t, 503, id.code, "no IDs meanwhile: %s", id.body)
	assert.Contains(t, id.body, "refused: ")
	assert.Equal(t, "0", srv.Do("HEXISTS", "{ringflake}:MARKS", "0"), "a refused clock writes no mark")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log %v", s.log())
	msgs := s.messages()
	assert.Equal(t, "ringflake: stopped before serving", msgs[len(msgs)-1])
	refusals := 0
	for _, m := range msgs {
		if strings.HasPrefix(m, "ringflake: the store refused this clock") {
			refusals++
		}
	}
	assert.Equal(t, 1, refusals, "the refusal is logged once: %v", msgs)
}
