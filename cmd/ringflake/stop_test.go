package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/internal/zktest"
)

// A SIGTERM to a gen that holds its lease while its store is paused
// (SIGSTOP: no answer, no error) ends it within its bound, as Redis's
// TestGenSIGTERMWhileWaitingForALostLease checks for Redis: the release
// gives up after two call timeouts (docs/leases.md, "Bounds on every
// wait"), and closing the store's client waits at most a second. It says
// it was interrupted, and that the release failed.
func TestGenSIGTERMWithItsStorePaused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) (url string, pause func())
	}{
		{"zookeeper", func(t *testing.T) (string, func()) {
			e := zktest.Start(t)
			s := e.Servers[0]
			return "zk://" + s.Addr + "/stop", s.Pause
		}},
		{"mysql", func(t *testing.T) (string, func()) {
			s := mysqltest.Start(t)
			return s.URL(), s.Pause
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			buildCLI(t)
			url, pause := tt.start(t)
			cmd, stdout, stderr, exited := startGen(t, "--lease", url, "--lease-ttl", "2s", "-n", "1000000000000")
			require.Eventually(t, func() bool { return stdout.String() != "" }, 30*time.Second, 10*time.Millisecond,
				"gen should print IDs; stderr %q", stderr.String())
			pause()
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			start := time.Now()
			code := waitExit(t, cmd, exited, 15*time.Second, stderr) // the bound is about 2.3 s at a TTL of 2 s
			t.Logf("gen exited %v after SIGTERM; stderr %q", time.Since(start).Round(time.Millisecond), stderr.String())
			assert.Equal(t, 1, code)
			assert.Regexp(t, `ringflake: gen: interrupted after \d+ IDs`, stderr.String())
			assert.Contains(t, stderr.String(), "releasing the machine ID's lease", "the failed release is reported")
			assert.True(t, strings.HasSuffix(stdout.String(), "\n"), "every ID printed is a whole line")
		})
	}
}
