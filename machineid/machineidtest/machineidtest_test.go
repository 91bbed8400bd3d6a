package machineidtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
)

// memHarness describes s to Run, with a TTL of a second.
func memHarness(s *memStore) machineidtest.Harness {
	return machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			l, err := s.newLeaser(lo, hi, ttl)
			if err != nil {
				return nil, err
			}
			t.Cleanup(l.stop)
			return l, nil
		},
		Abandon:   func(l machineid.Leaser) { l.(*memLeaser).cut.Store(true) },
		Restart:   func(*testing.T) { s.restart() },
		KeepsData: s.keeps,
		TTL:       time.Second,
	}
}

// TestRunOnMemStore runs the suite against the reference store, with a
// restart that keeps its data and one that drops it.
func TestRunOnMemStore(t *testing.T) {
	t.Parallel()
	for _, keeps := range []bool{true, false} {
		name := "drops data"
		if keeps {
			name = "keeps data"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			machineidtest.Run(t, memHarness(newMemStore(keeps, sound)))
		})
	}
}

// flawEnv names the flaw of the store that TestBrokenStore runs the suite
// against, in a subprocess of TestRunCatchesBrokenStores.
const flawEnv = "MACHINEIDTEST_FLAW"

// TestRunCatchesBrokenStores runs the suite against stores that each break
// one promise, and checks that the subtest meant to notice fails, saying
// why. Each runs in a subprocess, since a failing *testing.T cannot be
// inspected from inside: the test binary runs TestBrokenStore again, with
// flawEnv set and only that subtest selected.
func TestRunCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		flaw    flaw
		subtest string // the subtest of Run that must fail
		want    string // in its failure
	}{
		{shares, "Leases/Exclusive", "both got ID 0 from MachineID"},
		{lowAfter, "Leases/Release", "took ID 9"},
		{silent, "Leases/Expiry", "never reported the loss of ID 8"},
		{ignoresCtx, "Leases/Context", "want an error wrapping " + context.Canceled.Error()},
		{shrinks, "Leases/Marks", "Until of ID 10 went down"},
		{noFloor, "Restart", "want a restart floor"},
		{noCause, "Leases/Expiry", "with Err nil; want the loss's cause"},
		{lax, "Leases/Config", "want an error wrapping ringflake.ErrInvalidConfig"},
		{immortal, "Leases/Exclusive", "was abandoned; want it free once its lease expired"},
		{impatient, "Leases/Wait", "want it to wait for an ID to free until the deadline"},
	} {
		t.Run(string(tt.flaw), func(t *testing.T) {
			t.Parallel()
			run := "^TestBrokenStore$/^" + strings.ReplaceAll(tt.subtest, "/", "$/^") + "$"
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), flawEnv+"="+string(tt.flaw))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want the suite to fail against a store that is %s; got %v:\n%s", tt.flaw, err, out)
			assert.Contains(t, string(out), "--- FAIL: TestBrokenStore/"+tt.subtest+" ", "want %s to fail", tt.subtest)
			assert.Contains(t, string(out), tt.want, "want the failure to say why")
		})
	}
}

// TestBrokenStore runs the suite against a broken store, only as a
// subprocess of TestRunCatchesBrokenStores; it is meant to fail.
func TestBrokenStore(t *testing.T) {
	f, ok := os.LookupEnv(flawEnv)
	if !ok {
		t.Skip("runs only as a subprocess of TestRunCatchesBrokenStores")
	}
	machineidtest.Run(t, memHarness(newMemStore(flaw(f) != noFloor, flaw(f))))
}
