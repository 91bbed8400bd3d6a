// Command benchmarks compares ringflake with other Go Snowflake-style
// generators, side by side in one process: saturation throughput and CPU,
// latency under a paced load, the cost of a call (single and in bursts),
// allocations, and a duplicate check over every ID collected.
//
// From the repository root:
//
//	go run ./benchmarks            # about a minute on 2 cores
//	go run ./benchmarks -quick     # a few seconds, for CI
//	go run ./benchmarks -run sat,paced -rounds 5
//	go run ./benchmarks -run single,burst -rounds 5
//	go run ./benchmarks -run paced,busy   # also paced on a busy machine
//	go run ./benchmarks -run takes        # machine-ID takes on each lease store
//	go run ./benchmarks -run restart -rounds 7   # a Redis restart under live holders
//
// Generators take turns: each round runs every generator once per
// configuration, in an order rotated from round to round, so that noise
// from the machine falls on all of them alike. Tables report the median
// over rounds.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	run        map[string]bool
	rounds     int
	window     time.Duration
	gs         []int
	pacedDur   time.Duration
	rate       float64
	pacedG     int
	batches    int
	bursts     int
	peerFilter []string
	bufIDs     int
	cpuProfile string
	quick      bool
	holders    int
	restartTTL time.Duration
}

func parseFlags() (options, error) {
	var o options
	quick := flag.Bool("quick", false, "a run of a few seconds: 1 round, short windows (for CI)")
	run := flag.String("run", "sat,paced,single,burst,allocs", "scenarios to run, comma-separated: sat, paced, single, burst, allocs, busy (paced with another process spinning on every core) takes (machine-ID takes on a server of each lease store) and restart (a Redis restart under two live holders); the last three are not run by default")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of the saturation, paced and single-call scenarios")
	flag.DurationVar(&o.window, "window", 300*time.Millisecond, "saturation window per generator and G")
	gs := flag.String("g", "1,2,16,256", "goroutine counts for saturation")
	flag.DurationVar(&o.pacedDur, "paced", 500*time.Millisecond, "paced-load duration per generator and round")
	flag.Float64Var(&o.rate, "rate", 1e6, "paced load in IDs per second")
	flag.IntVar(&o.pacedG, "paced-g", 64, "goroutines sharing the paced load")
	flag.IntVar(&o.batches, "batches", 40, "single-call batches (one per tick) per generator and round")
	flag.IntVar(&o.bursts, "bursts", 200, "bursts (one per tick) per generator over the whole run, shared out among the rounds")
	peers := flag.String("peers", "", "only generators whose name contains one of these, comma-separated")
	flag.IntVar(&o.bufIDs, "buf", 8<<20, "IDs kept per saturation run for the duplicate check")
	flag.IntVar(&o.holders, "holders", 200, "holders taking machine IDs one after another in the takes scenario")
	flag.DurationVar(&o.restartTTL, "restart-ttl", 3*time.Second, "the holders' lease TTL in the restart scenario, 1s to 5m")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (with -peers to profile one generator)")
	flag.Parse()
	o.quick = *quick
	if *quick {
		o.rounds, o.window, o.pacedDur, o.batches, o.bursts = 1, 50*time.Millisecond, 100*time.Millisecond, 10, 20
	}
	var err error
	if o.run, err = parseScenarios(*run); err != nil {
		return o, err
	}
	if o.gs, err = parseCounts(*gs); err != nil {
		return o, err
	}
	if *peers != "" {
		o.peerFilter = strings.Split(*peers, ",")
	}
	if o.restartTTL < time.Second || o.restartTTL > 5*time.Minute {
		return o, fmt.Errorf("restart-ttl must be 1s to 5m, Redis's bounds")
	}
	if o.rounds < 1 || o.window <= 0 || o.pacedDur <= 0 || o.rate <= 0 || o.pacedG < 1 || o.batches < 1 || o.bursts < 1 || o.holders < 1 {
		return o, fmt.Errorf("rounds, window, paced, rate, paced-g, batches, bursts and holders must be positive")
	}
	return o, nil
}

// parseScenarios reads -run's comma-separated scenarios.
func parseScenarios(list string) (map[string]bool, error) {
	run := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		switch s = strings.TrimSpace(s); s {
		case "single", "burst", "allocs", "sat", "paced", "busy", "takes", "restart":
			run[s] = true
		case "":
		default:
			return nil, fmt.Errorf("unknown scenario %q", s)
		}
	}
	return run, nil
}

// parseCounts reads -g's comma-separated goroutine counts.
func parseCounts(list string) ([]int, error) {
	var gs []int
	for _, s := range strings.Split(list, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || g < 1 {
			return nil, fmt.Errorf("bad goroutine count %q", s)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

func main() {
	runHogIfChild()
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(2)
	}
	stop := func() {}
	if o.cpuProfile != "" {
		if stop, err = startProfile(o.cpuProfile); err != nil {
			fmt.Fprintln(os.Stderr, "benchmarks:", err)
			os.Exit(1)
		}
	}
	ok := run(o)
	stop()
	if !ok {
		os.Exit(1)
	}
}

// run runs the scenarios o asks for and prints their tables. It returns
// false if ringflake issued a duplicate, or a restart round failed.
func run(o options) bool {
	began := time.Now()
	peers, skipped := newPeers()
	peers = slices.DeleteFunc(peers, func(p *peer) bool { return !o.wants(p) })
	printMachine(os.Stdout, o)
	for _, s := range skipped {
		fmt.Printf("left out: %s\n", s)
	}
	dups := make(map[*peer]*dupResult, len(peers))
	for _, p := range peers {
		dups[p] = &dupResult{}
	}
	sum := summary{quick: o.quick}
	if o.run["sat"] {
		saturation(o, peers, dups, &sum)
	}
	if o.run["paced"] {
		paced(o, peers, dups, &sum, false)
	}
	if o.run["busy"] {
		paced(o, peers, dups, &sum, true)
	}
	if o.run["single"] || o.run["burst"] {
		callCost(o, peers, &sum)
	}
	if o.run["allocs"] {
		allocs(peers, &sum)
	}
	if o.run["sat"] || o.run["paced"] || o.run["busy"] {
		duplicates(peers, dups)
	}
	if o.run["takes"] {
		takes(o)
	}
	restartOK := !o.run["restart"] || restarts(o)
	printNotes(peers)
	sum.print()
	fmt.Printf("\ntotal run time %.1fs\n", time.Since(began).Seconds())
	if !restartOK {
		return false
	}
	for _, p := range peers {
		if dups[p].dups > 0 && p.name == "ringflake" {
			return false
		}
	}
	return true
}

func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func (o options) wants(p *peer) bool {
	if len(o.peerFilter) == 0 {
		return true
	}
	for _, f := range o.peerFilter {
		if f = strings.TrimSpace(f); f != "" && strings.Contains(p.name, f) {
			return true
		}
	}
	return false
}

// rotated returns peers starting at index round, so that each round runs
// them in a different order.
func rotated(peers []*peer, round int) []*peer {
	k := round % len(peers)
	return append(slices.Clone(peers[k:]), peers[:k]...)
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%5.1fs "+format+"\n", append([]any{time.Since(base).Seconds()}, a...)...)
}
