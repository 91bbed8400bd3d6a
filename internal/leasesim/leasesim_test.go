package leasesim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// scripts/leasesim drives this test through its flags; without them, go test
// runs a few seeds, as part of the suite.
var (
	seeds    = flag.Int("seeds", 0, "run this many seeds, from -first (default: 40, or 10 with -short)")
	first    = flag.Uint64("first", 1, "the first seed")
	seed     = flag.Uint64("seed", 0, "replay this seed, printing the events that led to its failure")
	name     = flag.String("mutant", "", "switch this mutant on (an engine mutant needs -tags ringflake_mutant)")
	list     = flag.Bool("mutants", false, "list the mutants, one a line")
	shard    = flag.String("shard", "0/1", "run only the seeds s with s%n == i, for -shard i/n")
	stopFile = flag.String("stopfile", "", "a file shared by the shards: the lowest failing seed so far, past which none need run")
	progress = flag.String("progress", "", "a file to write each seed's number to before it runs, to name the seed of a crash")
)

func TestMain(m *testing.M) {
	flag.Parse()
	// One P: the order of goroutines is then as repeatable as the runtime
	// allows, so that a failing seed replays.
	runtime.GOMAXPROCS(1)
	// Nor a collection while a world runs: the collector's workers are
	// scheduled by real time. runSeed collects between seeds.
	debug.SetGCPercent(-1)
	os.Exit(m.Run())
}

// TestLeaseSim runs seeds of the simulation, or replays one. A failure is
// reported on one line, "leasesim: seed=S invariant=I at=T ...", after the
// seed was replayed twice more to the same invariant at the same virtual
// time (or the line says it was not).
func TestLeaseSim(t *testing.T) {
	if *list {
		for _, m := range Mutants {
			fmt.Println(m.Name)
		}
		return
	}
	if !Switch(*name) {
		t.Fatalf("mutant %q: unknown, or an engine mutant in a build without -tags ringflake_mutant", *name)
	}
	if *seed != 0 {
		if *traceFile != "" {
			saveTrace(t, *seed)
		}
		res := runSeed(t, *seed, true)
		fmt.Printf("leasesim: seed=%d %s\n", *seed, res.Params)
		res.Log(os.Stdout)
		if res.Failure != nil {
			report(t, *seed, res)
		}
		fmt.Printf("leasesim: seed=%d passed (%d IDs, fingerprint %x)\n", *seed, res.IDs, res.Print)
		return
	}
	n := *seeds
	if n == 0 {
		n = 40
		if testing.Short() {
			n = 10
		}
	}
	i, of := parseShard(t, *shard)
	began, ran, ids := time.Now(), 0, 0
	for s := *first; s < *first+uint64(n); s++ {
		if s%uint64(of) != uint64(i) {
			continue
		}
		if stop := lowestFailure(); stop != 0 && s >= stop {
			break
		}
		if *progress != "" {
			_ = os.WriteFile(*progress, []byte(strconv.FormatUint(s, 10)+"\n"), 0o644)
		}
		res := runSeed(t, s, false)
		ran++
		ids += res.IDs
		if res.Failure != nil {
			noteFailure(s)
			fmt.Printf("leasesim: seed=%d %s\n", s, res.Params)
			res.Log(os.Stdout)
			report(t, s, res)
		}
	}
	d := time.Since(began)
	fmt.Printf("leasesim: shard %d/%d: %d seeds passed in %v (%.1f seeds/s, %d IDs)\n", i, of, ran, d.Round(time.Millisecond), float64(ran)/d.Seconds(), ids)
}

// runSeed runs one seed in a bubble of its own, with the mutant of -mutant.
func runSeed(t *testing.T, s uint64, verbose bool) Result {
	return runMutant(t, s, *name, verbose)
}

// runMutant runs one seed in a bubble of its own, with mutant m.
func runMutant(t *testing.T, s uint64, m string, verbose bool) Result {
	var res Result
	synctest.Test(t, func(*testing.T) { res = Run(s, m, verbose) })
	runtime.GC()
	return res
}

// report replays the failing seed s twice and fails the test with a line
// that names the seed, the invariant and whether the replays matched.
func report(t *testing.T, s uint64, res Result) {
	f := res.Failure
	same := 0
	for range 2 {
		again := runSeed(t, s, false).Failure
		if again != nil && again.Invariant == f.Invariant && again.At == f.At {
			same++
		}
	}
	fmt.Printf("leasesim: seed=%d invariant=%s at=%.6fs replays=%d/2 mutant=%q: %s\n", s, f.Invariant, f.At.Seconds(), same, *name, f.Detail)
	t.FailNow()
}

func parseShard(t *testing.T, s string) (int, int) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		t.Fatalf("-shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n
}

// lowestFailure returns the lowest failing seed the shards have written to
// the stop file, or 0.
func lowestFailure() uint64 {
	if *stopFile == "" {
		return 0
	}
	b, err := os.ReadFile(*stopFile)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// noteFailure writes s to the stop file if it is the lowest failing seed
// so far. Two shards failing at once may race; the loser's seed is the one
// kept, and each shard reports its own.
func noteFailure(s uint64) {
	if *stopFile == "" {
		return
	}
	if low := lowestFailure(); low != 0 && low < s {
		return
	}
	_ = os.WriteFile(*stopFile, []byte(strconv.FormatUint(s, 10)+"\n"), 0o644)
}

// TestCatchesAStoreThatSkipsTheToken shows, in every run of the suite,
// that the checks catch a broken lease: a store whose renewal takes the
// lease from whoever holds it lets two generators issue the same ticks
// with one machine ID, and a seed among the first 100 must show it and
// replay to it. The engine's own mutants need the build tag
// ringflake_mutant; scripts/leasesim runs them.
//
// Under the race detector, whose scheduler runs goroutines woken together
// (as at a world's heal) in a random order, a replay that takes another
// turn is logged and the next seed that fails is tried; without it (as
// scripts/leasesim runs), the first failing seed must replay.
func TestCatchesAStoreThatSkipsTheToken(t *testing.T) {
	if *seed != 0 || *seeds != 0 || *name != "" {
		t.Skip("scripts/leasesim's run")
	}
	for s := uint64(1); s <= 100; s++ {
		f := runMutant(t, s, storeMutantName, false).Failure
		if f == nil {
			continue
		}
		again := runMutant(t, s, storeMutantName, false).Failure
		if again == nil || again.Invariant != f.Invariant || again.At != f.At {
			if raceEnabled {
				t.Logf("seed %d failed with %v, and its replay under the race detector with %v: trying the next", s, f, again)
				continue
			}
			t.Fatalf("seed %d failed with %v, and its replay with %v", s, f, again)
		}
		t.Logf("seed %d: %v", s, f)
		return
	}
	t.Fatal("no seed of the first 100 caught a store whose renewal skips the token")
}
