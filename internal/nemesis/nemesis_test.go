// Package nemesis runs the lease stores as real processes under faults, as
// Jepsen does: real servers (redis-server, etcd, PostgreSQL, kube-apiserver
// over etcd, or the state file's directory), holder processes that each hold
// a machine ID through the store's real machineid.Holder and a real
// generator and write every ID they issue, and a seeded schedule of faults
// drawn from the menu in docs/leases.md, swarm style. After the world heals
// and the holders stop, every ID is checked: none repeated, none at or
// below its holding's After. scripts/nemesis runs it; a failing seed prints
// the command that replays it.
//
// A store is one entry of stores (stores_test.go, redis_test.go): how to
// start its servers and which faults its docs allow on them, and how a
// holder makes its client and Holder.
package nemesis

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/clockshift"
)

var (
	flagStore    = flag.String("nemesis.store", "", "the store: "+strings.Join(storeNames(), ", ")+"; empty: a short run on each")
	flagSeed     = flag.Uint64("nemesis.seed", 1, "the first seed")
	flagSeeds    = flag.Int("nemesis.seeds", 1, "how many seeds, from -nemesis.seed")
	flagDuration = flag.Duration("nemesis.duration", 25*time.Second, "how long each seed's faults run, before the heal")
	flagEvents   = flag.Bool("nemesis.v", false, "print every event of the schedule as it happens")
	flagKeep     = flag.String("nemesis.keep", "", "keep each seed's servers' data, holders' logs and IDs under this directory")
	flagMutant   = flag.String("nemesis.mutant", "", "switch this mutant on in every holder (internal/mutant; needs -tags ringflake_mutant)")
	flagFaults   = flag.String("nemesis.faults", "", "draw only from the faults whose names match this regular expression")
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(holderEnv); cfg != "" {
		os.Exit(hold(cfg))
	}
	code := m.Run()
	clockshift.Cleanup()
	os.Exit(code)
}

// TestNemesis runs the seeds the flags name. Without -nemesis.store (as
// scripts/test runs it) it runs seed 1 for 6 s on the file store and on
// Redis: a check that the harness itself works; scripts/nemesis runs the
// real thing.
func TestNemesis(t *testing.T) {
	kinds, d := []string{*flagStore}, *flagDuration
	if *flagStore == "" {
		kinds, d = []string{"file", "redis"}, 6*time.Second
	} else if *flagStore == "all" {
		kinds = storeNames()
	}
	for _, kind := range kinds {
		if _, ok := stores[kind]; !ok {
			t.Fatalf("nemesis: no store %q; the stores are %s", kind, strings.Join(storeNames(), ", "))
		}
		for seed := *flagSeed; seed < *flagSeed+uint64(*flagSeeds); seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", kind, seed), func(t *testing.T) { runSeed(t, kind, seed, d, *flagMutant) })
		}
	}
}

// runSeed runs one seed's world and checks what its holders issued.
func runSeed(t *testing.T, kind string, seed uint64, d time.Duration, mutant string) {
	w := newWorld(t, kind, seed, mutant)
	w.start = time.Now()
	w.srv = stores[kind].start(w)
	menu, err := only(append(holderFaults(w.srv.upstream() != ""), w.srv.faults()...), *flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	w.swarm(menu)
	w.startHolders()
	w.run(d)
	w.heal()
	// Every holder issues again after the heal (a ride past its ceiling,
	// a lease taken anew), then stops and releases.
	w.until(w.now + 2*w.set.TTL + w.set.Bound + time.Second)
	for _, h := range w.hs {
		w.stop(h)
	}
	w.note("holders stopped")
	v, err := check(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	replay := fmt.Sprintf("scripts/nemesis -store %s -seed %d -duration %v", kind, seed, d)
	if *flagFaults != "" {
		replay += fmt.Sprintf(" -faults '%s'", *flagFaults)
	}
	if mutant != "" {
		replay += " -mutant " + mutant
	}
	summary := fmt.Sprintf("nemesis: store=%s seed=%d mutant=%q ids=%d repeated=%d early=%d", kind, seed, mutant, v.ids, v.repeated, v.early)
	if v.repeated == 0 && v.early == 0 {
		t.Log(summary)
		if v.ids == 0 {
			t.Errorf("nemesis: no ID issued in the whole run: the harness or the store is broken; the holders' logs end:\n%s", logTails(w.dir))
		}
		return
	}
	if *flagEvents {
		t.Logf("the holders' logs end:\n%s", logTails(w.dir))
	}
	tail := w.events[max(0, len(w.events)-80):]
	t.Errorf("events:\n%s\n%s\n%s\nreplay: %s", strings.Join(tail, "\n"), strings.Join(v.examples, "\n"), summary, replay)
}

// only returns the faults of all whose names match expr ("": all), or an
// error if none does.
func only(all []fault, expr string) ([]fault, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("nemesis: -faults: %w", err)
	}
	var fs []fault
	for _, f := range all {
		if re.MatchString(f.name) {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("nemesis: no fault matches %q", expr)
	}
	return fs, nil
}

// logTails returns the last lines of each holder's log in dir.
func logTails(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "%s:\n  %s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-4):], "\n  "))
	}
	return b.String()
}
