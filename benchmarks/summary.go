package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"
)

// summary holds ringflake's figures for the checks printed at the end of a
// run, each a ratio measured in the same run or an absolute bound.
type summary struct {
	quick             bool    // a -quick run, whose statuses are only indicative
	single, singleRef float64 // ns/op of ringflake and bwmarrin, single-call scenario
	burst, burstRef   float64 // the same in bursts
	sat               []satSummary
	paced, busy       pacedSummary
	allocs            float64 // the most allocations per ID seen
	allocsSet         bool
	allocsNoise       float64 // the most seen for bwmarrin, which never allocates: the harness's noise
}

// allocsFloor is the count per ID taken for noise even when bwmarrin shows
// none in a run: one allocation per 100 k IDs, about one per 24 ticks at
// the ceiling. A generator that allocated once per tick would show 2.4e-4.
const allocsFloor = 1e-5

type pacedSummary struct {
	p999, mutex float64 // ns: ringflake's p99.9 and the best mutex peer's
	set         bool
}

type satSummary struct {
	g           int
	ofCeiling   float64
	cpu, cpuRef float64 // CPU s per M IDs: ringflake's and bwmarrin's
	errors      int64
}

func (s *summary) print() {
	fmt.Println("\nchecks, ringflake in this run:")
	if s.quick {
		fmt.Println("(a -quick run: one round of 50 ms windows, for CI's duplicate check; a tick lost to one late wake-up is 2 % of a window,")
		fmt.Println("so these statuses are indicative only; the README's full run is the measurement)")
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "check\tmeasured\tstatus")
	if s.singleRef > 0 {
		fmt.Fprintf(w, "single call <= bwmarrin's\t%.1f vs %.1f ns (%.2fx)\t%s\n", s.single, s.singleRef, s.single/s.singleRef, met(s.single <= s.singleRef))
	}
	if s.burstRef > 0 {
		fmt.Fprintf(w, "call in a burst <= bwmarrin's\t%.1f vs %.1f ns (%.2fx)\t%s\n", s.burst, s.burstRef, s.burst/s.burstRef, met(s.burst <= s.burstRef))
	}
	var failed int64
	for _, r := range s.sat {
		fmt.Fprintf(w, "saturation >= 0.995 of ceiling, G=%d\t%.4f\t%s\n", r.g, r.ofCeiling, met(r.ofCeiling >= 0.995))
		failed += r.errors
	}
	if len(s.sat) > 0 {
		fmt.Fprintf(w, "no failed call at saturation (a wait ends in an ID)\t%d failed (all G, all rounds)\t%s\n", failed, met(failed == 0))
	}
	for _, r := range s.sat {
		if r.g == 16 && r.cpuRef > 0 {
			fmt.Fprintf(w, "CPU per M IDs at G=16 <= half of bwmarrin's\t%.3f vs %.3f s (%.2fx)\t%s\n", r.cpu, r.cpuRef, r.cpu/r.cpuRef, met(r.cpu <= r.cpuRef/2))
		}
	}
	for _, p := range []struct {
		label string
		pacedSummary
	}{{"paced", s.paced}, {"paced, busy machine", s.busy}} {
		if !p.set {
			continue
		}
		fmt.Fprintf(w, "%s: p99.9 <= 1 µs\t%v\t%s\n", p.label, dur(p.p999), met(p.p999 <= float64(time.Microsecond)))
		if p.mutex > 0 {
			fmt.Fprintf(w, "%s: p99.9 <= half of every mutex peer's\t%v vs best mutex peer %v (%s)\t%s\n",
				p.label, dur(p.p999), dur(p.mutex), ratio(p.p999, p.mutex), met(p.p999 <= p.mutex/2))
		}
	}
	if s.allocsSet {
		floor := max(s.allocsNoise, allocsFloor)
		fmt.Fprintf(w, "0 allocations per ID\tat most %.2g per ID (tables 1 and 4); noise floor %.2g\t%s\n", s.allocs, floor, met(s.allocs <= floor))
	}
	w.Flush()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
