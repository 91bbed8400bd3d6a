package main

import (
	"fmt"
	"os"
	"text/tabwriter"
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

// print writes the closing checks in two tables. Properties hold on any
// machine, so each gets a status: no call failed at saturation, no
// allocation per ID beyond the harness's noise. Figures move with the
// machine and what else runs on it (the cost of a clock read, a late
// wake-up on a shared VM), so they are reported with the ratio to a peer
// measured in the same run, and claim nothing: another machine's run
// cannot miss what a figure never promised. The duplicate check is the
// command's exit status.
func (s *summary) print() {
	fmt.Println("\nproperties, ringflake in this run (they hold on any machine):")
	if s.quick {
		fmt.Println("(a -quick run: one round of 50 ms windows, for CI's duplicate check; the README's full run is the measurement)")
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "property\tmeasured\tstatus")
	var failed int64
	for _, r := range s.sat {
		failed += r.errors
	}
	if len(s.sat) > 0 {
		fmt.Fprintf(w, "no failed call at saturation (a wait ends in an ID)\t%d failed (all G, all rounds)\t%s\n", failed, met(failed == 0))
	}
	if s.allocsSet {
		floor := max(s.allocsNoise, allocsFloor)
		fmt.Fprintf(w, "0 allocations per ID\tat most %.2g per ID (tables 1 and 4); noise floor %.2g\t%s\n", s.allocs, floor, met(s.allocs <= floor))
	}
	w.Flush()

	fmt.Println("\nfigures, ringflake in this run (they move with the machine: compare the ratios, measured side by side):")
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tmeasured")
	if s.singleRef > 0 {
		fmt.Fprintf(w, "single call, vs bwmarrin's\t%.1f vs %.1f ns (%.2fx)\n", s.single, s.singleRef, s.single/s.singleRef)
	}
	if s.burstRef > 0 {
		fmt.Fprintf(w, "call in a burst, vs bwmarrin's\t%.1f vs %.1f ns (%.2fx)\n", s.burst, s.burstRef, s.burst/s.burstRef)
	}
	for _, r := range s.sat {
		fmt.Fprintf(w, "saturation, of the ceiling, G=%d\t%.4f\n", r.g, r.ofCeiling)
	}
	for _, r := range s.sat {
		if r.g == 16 && r.cpuRef > 0 {
			fmt.Fprintf(w, "CPU per M IDs at G=16, vs bwmarrin's\t%.3f vs %.3f s (%.2fx)\n", r.cpu, r.cpuRef, r.cpu/r.cpuRef)
		}
	}
	for _, p := range []struct {
		label string
		pacedSummary
	}{{"paced", s.paced}, {"paced, busy machine", s.busy}} {
		if !p.set {
			continue
		}
		if p.mutex > 0 {
			fmt.Fprintf(w, "%s: p99.9, vs the best mutex peer's\t%v vs %v (%s)\n", p.label, dur(p.p999), dur(p.mutex), ratio(p.p999, p.mutex))
		} else {
			fmt.Fprintf(w, "%s: p99.9\t%v\n", p.label, dur(p.p999))
		}
	}
	w.Flush()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
