package leasesim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var traceFile = flag.String("trace", "", "with -seed, write the world's trace to this file (JSON), for machineid_redis's replay test")

// saveTrace runs seed s again with its trace recorded, and writes the trace
// to -trace's file.
func saveTrace(t *testing.T, s uint64) {
	res, tr := recordSeed(t, s, *name)
	b, err := tr.Marshal()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(*traceFile, b, 0o644))
	failed := "no failure"
	if res.Failure != nil {
		failed = res.Failure.String()
	}
	fmt.Printf("leasesim: seed=%d trace of %d events written to %s (%s)\n", s, len(tr.Events), *traceFile, failed)
}

// recordSeed runs one seed in a bubble of its own, with mutant m, and
// records its trace.
func recordSeed(t *testing.T, s uint64, m string) (Result, *Trace) {
	var res Result
	var tr *Trace
	synctest.Test(t, func(*testing.T) { res, tr = Record(s, m) })
	runtime.GC()
	return res, tr
}

// TestRecordIsRun checks that recording a world's trace changes nothing in
// it (the same IDs, the same failure), and that the trace reads back as
// written: a Redis world's restarts, Holders' News and clocks are in it.
func TestRecordIsRun(t *testing.T) {
	if *seed != 0 || *seeds != 0 || *name != "" {
		t.Skip("scripts/leasesim's run")
	}
	const s = 471 // a Redis world with restarts, snapshots and clocks stepped back
	res, tr := recordSeed(t, s, "")
	plain := runMutant(t, s, "", false)
	if !raceEnabled { // the race detector's scheduler takes other turns
		assert.Equal(t, plain.Print, res.Print, "the world ran another way with its trace recorded")
	}
	b, err := tr.Marshal()
	require.NoError(t, err)
	back, err := ReadTrace(b)
	require.NoError(t, err)
	assert.Equal(t, tr, back, "the trace should read back as it was written")
	assert.Equal(t, "redis", tr.Store)
	ops := map[string]int{}
	for _, e := range tr.Events {
		ops[e.Op]++
	}
	for _, op := range []string{OpOffset, OpNew, OpClose, OpRestart, OpSnapshot} {
		assert.NotZero(t, ops[op], "the trace of seed %d should have %q events: %v", s, op, ops)
	}
}
