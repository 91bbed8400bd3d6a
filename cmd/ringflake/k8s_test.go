package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/k8stest"
)

// k8sEnv returns the test's environment with the cluster settings of a
// shell outside a pod replaced by set: no $KUBECONFIG, no
// KUBERNETES_SERVICE_HOST, and a HOME of its own, without ~/.kube.
func k8sEnv(t *testing.T, set ...string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "KUBECONFIG" && k != "HOME" && !strings.HasPrefix(k, "KUBERNETES_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "HOME="+t.TempDir()), set...)
}

// TestCLIK8sLease runs gen on Leases with a kubeconfig, once, and then in
// rounds of processes on three IDs, some killed with SIGKILL (their Leases
// left to be taken over), some stopped with SIGTERM (releasing them): every
// ID printed by any of them is distinct, and each refusal is one line,
// after the library's log records if any.
func TestCLIK8sLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	s := k8stest.Start(t)
	s.CreateNamespace("cli")
	env := k8sEnv(t, "KUBECONFIG="+s.Kubeconfig(k8stest.Admin))

	p, err := runCLIEnv(context.Background(), bin, env, []string{"gen", "--lease", "k8s://cli?prefix=once-", "-n", "5"}, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 0, p.code, "gen --lease k8s://cli; stderr %q", p.stderr)
	assert.Len(t, p.ids, 5)
	code, body := s.Do(s.Token(k8stest.Admin), "GET", "/apis/coordination.k8s.io/v1/namespaces/cli/leases/once-0", nil)
	assert.Equal(t, 200, code, "the Lease once-0 after gen: %s", body)
	assert.NotContains(t, string(body), `"holderIdentity"`, "gen released its Lease on exit: %s", body)

	const rounds, perRound = 3, 5
	rng := rand.New(rand.NewPCG(3, 4))
	var (
		mu    sync.Mutex
		procs []proc
	)
	for round := range rounds {
		var g errgroup.Group
		for i := range perRound {
			args := []string{"gen", "--lease", "k8s://cli", "--machine-range", "0-2", "--lease-ttl", "2s", "-n", "200000"}
			var stopAfter time.Duration
			sig := syscall.SIGKILL
			switch i % 3 {
			case 0:
				stopAfter = time.Duration(rng.IntN(300)+30) * time.Millisecond
			case 1:
				stopAfter, sig = time.Duration(rng.IntN(300)+30)*time.Millisecond, syscall.SIGTERM
			}
			g.Go(func() error {
				p, err := runCLIEnv(context.Background(), bin, env, args, stopAfter, sig)
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
	}

	var all []int64
	outcomes := map[string]int{}
	machines := map[int64]int{}
	for _, p := range procs {
		all = append(all, p.ids...)
		for _, id := range p.ids {
			machines[ringflake.DefaultLayout().Decompose(ringflake.ID(id)).Machine]++
		}
		switch {
		case p.killed:
			outcomes["killed"]++
		case p.code == 0:
			outcomes["finished"]++
			checkStderr(t, p)
		default:
			// The reason is the last line: a lease lost, or a wait for a
			// free machine ID, is logged before gen fails with it.
			outcomes[reason(checkStderr(t, p))]++
		}
	}
	t.Logf("%d processes, %d IDs on machines %v; outcomes %v", len(procs), len(all), machines, outcomes)
	require.NotEmpty(t, all, "some process should have printed IDs")
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		require.NotEqual(t, all[i-1], all[i], "ID %d printed twice across processes", all[i])
	}
}

// TestCLIK8sRefusals checks the one line gen prints when it cannot lease
// from Kubernetes: no kubeconfig, a kubeconfig that is not one, a pod
// without its service account, an identity RBAC does not allow.
func TestCLIK8sRefusals(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	s := k8stest.Start(t)
	garbage := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(garbage, []byte("clusters: [oops\n"), 0o600))
	for _, tt := range []struct {
		name string
		env  []string
		code int
		want []string
	}{
		{"no kubeconfig", k8sEnv(t), 2, []string{"ringflake: gen: lease k8s://default: no kubeconfig: ~/.kube/config names no cluster; set KUBECONFIG"}},
		{"missing file", k8sEnv(t, "KUBECONFIG=/nonexistent/kubeconfig"), 2, []string{"no kubeconfig: $KUBECONFIG (/nonexistent/kubeconfig) names no cluster"}},
		{"garbage file", k8sEnv(t, "KUBECONFIG="+garbage), 2, []string{"ringflake: gen: lease k8s://default: kubeconfig: ", garbage}},
		{"pod without a service account", k8sEnv(t, "KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=1"), 2,
			[]string{"in a pod (KUBERNETES_SERVICE_HOST is set) without $KUBECONFIG: ", "serviceaccount/token"}},
		{"forbidden", k8sEnv(t, "KUBECONFIG="+s.Kubeconfig(k8stest.Nobody)), 1,
			[]string{`User "nobody" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "default"`, "deploy/kubernetes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := runCLIEnv(context.Background(), bin, tt.env, []string{"gen", "--lease", "k8s://default", "--acquire-timeout", "5s"}, 0, 0)
			require.NoError(t, err)
			t.Log(p.stderr)
			assert.Equal(t, tt.code, p.code, "exit status; stderr %q", p.stderr)
			assert.Empty(t, p.ids)
			assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
			assert.Equal(t, 1, strings.Count(p.stderr, "ringflake: "), "want one prefix, got %q", p.stderr)
			for _, w := range tt.want {
				assert.Contains(t, p.stderr, w)
			}
		})
	}
}
