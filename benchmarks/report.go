package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

func table(title string) *tabwriter.Writer {
	fmt.Printf("\n%s\n", title)
	return tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
}

// callCost runs the single-call and burst scenarios that o asks for and
// prints them in one table, each with its ratio to bwmarrin.
func callCost(o options, peers []*peer, sum *summary) {
	single := map[*peer][]float64{}
	burst := map[*peer][]float64{}
	var wall, mon []float64
	for round := range o.rounds {
		// The bursts are shared out among the rounds, so that every
		// generator has o.bursts in all, taken in turns with the others.
		bursts := o.bursts/o.rounds + btoi(round < o.bursts%o.rounds)
		if o.run["single"] {
			progress("single-call cost: round %d/%d ...", round+1, o.rounds)
			for _, p := range rotated(peers, round) {
				b := o.batches
				if p.tick > time.Millisecond {
					b = max(b/10, 1) // ten times the tick: keep its time alike
				}
				single[p] = append(single[p], singleCost(p, b)...)
			}
			wall = append(wall, clockCost(readWall, o.batches)...)
			mon = append(mon, clockCost(readMono, o.batches)...)
		}
		if o.run["burst"] && bursts > 0 {
			progress("burst cost: round %d/%d ...", round+1, o.rounds)
			for _, p := range rotated(peers, round) {
				burst[p] = append(burst[p], burstCost(p, bursts)...)
			}
		}
	}
	var singleRef, burstRef float64
	for _, p := range peers {
		if p.name == "bwmarrin/snowflake" {
			singleRef, burstRef = median(single[p]), median(burst[p])
		}
	}
	w := table(fmt.Sprintf("(3) Uncontended call cost, one goroutine, median ns per call: single = a quarter of a tick's IDs back to back "+
		"from the start of a fresh tick (per batch); burst = %d calls (fewer if a tick holds fewer) right after a tick boundary (per burst)", burstCalls))
	fmt.Fprintln(w, "generator	single ns/op	vs bwmarrin	batches	burst ns/op	vs bwmarrin	bursts × calls")
	cols := func(xs []float64, ref float64) string {
		if len(xs) == 0 {
			return "-\t-\t-"
		}
		m := median(xs)
		return fmt.Sprintf("%.1f\t%s\t%d", m, ratio(m, ref), len(xs))
	}
	for _, p := range peers {
		b := cols(burst[p], burstRef)
		if len(burst[p]) > 0 {
			b += fmt.Sprintf(" × %d", burstLen(p))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.name, cols(single[p], singleRef), b)
		if p.name == "ringflake" {
			sum.single, sum.singleRef = median(single[p]), singleRef
			sum.burst, sum.burstRef = median(burst[p]), burstRef
		}
	}
	if len(wall) > 0 {
		fmt.Fprintf(w, "(time.Now)\t%.1f\t\t%d\n", median(wall), len(wall))
		fmt.Fprintf(w, "(monotonic read, time.Since)\t%.1f\t\t%d\n", median(mon), len(mon))
	}
	w.Flush()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func allocs(peers []*peer, sum *summary) {
	progress("allocations ...")
	w := table("(4) Allocations per ID: one goroutine, 2.5 ticks' worth of IDs, waits included (runtime.MemStats.Mallocs; saturation table has it under contention)")
	fmt.Fprintln(w, "generator\tallocs/ID")
	for _, p := range peers {
		a := allocsPerID(p)
		fmt.Fprintf(w, "%s\t%.2g\n", p.name, a)
		switch p.name {
		case "ringflake":
			sum.allocs, sum.allocsSet = max(sum.allocs, a), true
		case "bwmarrin/snowflake":
			sum.allocsNoise = max(sum.allocsNoise, a)
		}
	}
	w.Flush()
}

// warmUp is the window of each generator's unmeasured first run at each G.
const warmUp = 20 * time.Millisecond

func saturation(o options, peers []*peer, dups map[*peer]*dupResult, sum *summary) {
	rec := newRecorder(o.bufIDs)
	scratch := make([]int64, o.bufIDs)
	type key struct {
		p *peer
		g int
	}
	res := map[key][]satResult{}
	// A short unmeasured run of each generator at each G first, so that
	// one-time costs (a runtime's first sudogs for many parked goroutines,
	// a generator's wait structures growing to G) do not count as
	// allocations per ID in a short round. Its IDs are still checked.
	for _, g := range o.gs {
		progress("saturation: warm-up, G=%d ...", g)
		for _, p := range peers {
			_, unrecorded := saturate(p, g, warmUp, rec)
			dups[p].check(rec.ids(), unrecorded, p, time.Now(), &scratch)
		}
	}
	for round := range o.rounds {
		for _, g := range o.gs {
			progress("saturation: round %d/%d, G=%d ...", round+1, o.rounds, g)
			for _, p := range rotated(peers, round) {
				r, unrecorded := saturate(p, g, o.window, rec)
				dups[p].check(rec.ids(), unrecorded, p, time.Now(), &scratch)
				res[key{p, g}] = append(res[key{p, g}], r)
			}
		}
	}
	w := table(fmt.Sprintf("(1) Saturation: G goroutines issuing flat out for %v windows on tick boundaries (median of %d rounds)", o.window, o.rounds))
	fmt.Fprintln(w, "generator\tG\tIDs/s\tceiling/s\tof ceiling\tCPU s per M IDs\tCPU vs bwmarrin\tcores busy\tallocs/ID\terrors")
	for _, g := range o.gs {
		var ref float64
		for _, p := range peers {
			if p.name == "bwmarrin/snowflake" {
				ref = medianOf(res[key{p, g}], satResult.cpuPerM)
			}
		}
		for _, p := range peers {
			rs := res[key{p, g}]
			rate := medianOf(rs, satResult.rate)
			cpu := medianOf(rs, satResult.cpuPerM)
			var fails int64
			for _, r := range rs {
				fails += r.fails
			}
			allocs := medianOf(rs, satResult.allocsPerID)
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%.4f\t%.3f\t%s\t%.2f\t%.2g\t%d\n", p.name, g, si(rate), si(p.ceiling()),
				rate/p.ceiling(), cpu, ratio(cpu, ref), medianOf(rs, satResult.cores), allocs, fails)
			if p.name == "ringflake" {
				sum.sat = append(sum.sat, satSummary{g: g, ofCeiling: rate / p.ceiling(), cpu: cpu, cpuRef: ref, errors: fails})
				sum.allocs, sum.allocsSet = max(sum.allocs, allocs), true
			}
			if p.name == "bwmarrin/snowflake" {
				sum.allocsNoise = max(sum.allocsNoise, allocs)
			}
		}
	}
	w.Flush()
}

func paced(o options, peers []*peer, dups map[*peer]*dupResult, sum *summary, busy bool) {
	name, title := "paced load", fmt.Sprintf("(2) Paced load: %s IDs/s over %d goroutines for %v, latency of each call (median of %d rounds)",
		si(o.rate), o.pacedG, o.pacedDur, o.rounds)
	if busy {
		n := runtime.NumCPU()
		h, err := startHogs(n)
		if err != nil {
			fmt.Printf("\n(2b) skipped: %v\n", err)
			return
		}
		defer h.stop()
		name = "paced load, busy machine"
		title = fmt.Sprintf("(2b) The same paced load on a busy machine: %d other processes spin, one per core, so the kernel preempts threads anywhere, lock holders included (median of %d rounds)", n, o.rounds)
	}
	interval := time.Duration(float64(o.pacedG) * float64(time.Second) / o.rate)
	bufs := newPacedBufs(o.pacedG, int(o.pacedDur/interval)+1)
	res := map[*peer][]pacedResult{}
	var scratch []int64
	for round := range o.rounds {
		progress("%s: round %d/%d ...", name, round+1, o.rounds)
		for _, p := range rotated(peers, round) {
			r, ids := pace(p, o.rate, o.pacedG, o.pacedDur, bufs)
			dups[p].check(ids, 0, p, time.Now(), &scratch)
			r.lat = r.lat[:len(r.lat):len(r.lat)]
			res[p] = append(res[p], r)
		}
	}
	q := func(x float64) func(pacedResult) float64 {
		return func(r pacedResult) float64 { return float64(r.quantile(x)) }
	}
	w := table(title)
	fmt.Fprintln(w, "generator\tIDs/s got\tp50\tp99\tp99.9\tmax\tp99.9 vs best mutex peer\tpacer behind, max\terrors")
	bestMutex := 0.0
	for _, p := range peers {
		if v := medianOf(res[p], q(0.999)); p.mutex && (bestMutex == 0 || v < bestMutex) {
			bestMutex = v
		}
	}
	for _, p := range peers {
		rs := res[p]
		var fails int64
		for _, r := range rs {
			fails += r.fails
		}
		p999 := medianOf(rs, q(0.999))
		if p.name == "ringflake" {
			ps := &sum.paced
			if busy {
				ps = &sum.busy
			}
			*ps = pacedSummary{p999: p999, mutex: bestMutex, set: true}
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%v\t%v\t%s\t%s\t%d\n", p.name, si(medianOf(rs, pacedResult.rate)),
			dur(medianOf(rs, q(0.5))), dur(medianOf(rs, q(0.99))), dur(p999),
			dur(medianOf(rs, q(1))), ratio(p999, bestMutex), dur(medianOf(rs, pacedResult.maxLag)), fails)
	}
	w.Flush()
	fmt.Println("each call is timed with two monotonic reads, which add about one read's cost (table 3) to every figure;")
	fmt.Printf("\"pacer behind\": how late the pacer's workers got against their schedules; deadlines over %v late were dropped\n", time.Duration(maxLag))
}

func duplicates(peers []*peer, dups map[*peer]*dupResult) {
	w := table("(5) Duplicate check: every ID of every saturation and paced run, sorted per run; runs' ID ranges compared across runs")
	fmt.Fprintln(w, "generator\truns\tIDs checked\tnot kept\tduplicates\toverlapping runs\tlatest ID vs clock")
	for _, p := range peers {
		d := dups[p]
		lead := "-"
		if d.leadSet {
			lead = fmt.Sprintf("%+.1f ms", d.lead.Seconds()*1e3)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.name, d.runs, d.checked, d.unrecorded, d.dups, d.overlaps, lead)
	}
	w.Flush()
	fmt.Println("\"latest ID vs clock\": the time in the newest ID of a run minus the clock when the run ended, largest over runs; above zero means IDs ran ahead of the clock")
}

func printNotes(peers []*peer) {
	fmt.Println("\nnotes:")
	for _, p := range peers {
		if p.note != "" {
			fmt.Printf("  %s: %s\n", p.name, p.note)
		}
	}
}

func printMachine(out io.Writer, o options) {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	rev := "unknown commit"
	if b, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		rev = "commit " + strings.TrimSpace(string(b))
	}
	kernel := readTrim("/proc/sys/kernel/osrelease")
	if cs := readTrim("/sys/devices/system/clocksource/clocksource0/current_clocksource"); cs != "" {
		kernel += ", clocksource " + cs
	}
	fmt.Fprintf(out, "machine: %s, %d cores, GOMAXPROCS=%d, %s %s/%s, kernel %s; %s; %s\n", cpu, runtime.NumCPU(),
		runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, kernel, rev, time.Now().UTC().Format(time.RFC3339))
	scen := []string{}
	for _, s := range []string{"sat", "paced", "busy", "single", "burst", "allocs", "takes", "restart"} {
		if o.run[s] {
			scen = append(scen, s)
		}
	}
	fmt.Fprintf(out, "scenarios: %s; rounds %d\n", strings.Join(scen, ","), o.rounds)
}

func medianOf[T any](rs []T, f func(T) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

func ratio(x, ref float64) string {
	if ref == 0 {
		return "-"
	}
	if r := x / ref; r < 0.1 || r >= 100 {
		return fmt.Sprintf("%.2gx", r)
	}
	return fmt.Sprintf("%.2fx", x/ref)
}

// si formats a rate with a k or M suffix.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.3fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// dur formats nanoseconds compactly.
func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%.2fms", float64(d)/1e6)
}

// readTrim returns a small file's contents without surrounding space, or ""
// if it cannot be read.
func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
