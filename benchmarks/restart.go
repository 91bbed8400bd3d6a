package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_redis"
)

// The restart scenario measures what a Redis restart costs live holders:
// two holders of one range, each issuing about one ID a millisecond at a
// TTL of 3s (-restart-ttl), and a restart of Redis, without persistence,
// at a point of their renewal period drawn at random, from the same seed in
// every run, so that two runs compare. The holders take their IDs at a
// point of Redis's second drawn likewise: waiting for Redis's uptime ends
// just past one of its whole seconds, and at a TTL of 3s the renewals would
// then stay there, which no fleet does, and the start Redis reads in whole
// seconds would always be as late as it can be. Each holder's longest stretch without an
// ID and its calls refused are recorded; every ID is checked for repeats.
// Each round has a server of its own, up long enough that the holders take
// their IDs at once.

const restartBound = 2 * time.Second // the clock bound, the default

// restartRun is one holder's figures in one round.
type restartRun struct {
	gap     time.Duration // the longest time between two IDs issued
	refused int           // calls refused
	issued  int
}

// restartRound is one round's figures.
type restartRound struct {
	runs     []restartRun
	downtime time.Duration
	dups     int
}

// restarts runs the restart scenario and prints its table.
func restarts(o options) bool {
	var rounds []restartRound
	rnd := rand.New(rand.NewPCG(31, 3))
	for i := range o.rounds {
		progress("restart: round %d of %d ...", i+1, o.rounds)
		var r restartRound
		skew, at := time.Duration(rnd.Int64N(int64(time.Second))), time.Duration(rnd.Int64N(int64(o.restartTTL/3)))
		err := withTB(func(tb testing.TB) { r = restartOnce(tb, o.restartTTL, skew, at) })
		if err != nil {
			fmt.Printf("restart: round %d failed: %v\n", i+1, err)
			return false
		}
		rounds = append(rounds, r)
	}
	w := table(fmt.Sprintf("(7) A Redis restart under two live holders, each issuing about one ID a ms, TTL %v, clock bound %v, the restart at a random point of the renewal period (seeded: the same in every run); %d rounds: "+
		"pause = a holder's longest time without an ID, refused = its calls refused meanwhile", o.restartTTL, restartBound, len(rounds)))
	fmt.Fprintln(w, "round\tdowntime ms\tpause ms (each holder)\trefused (each holder)\trepeats")
	var gaps, refused []float64
	dups := 0
	for i, r := range rounds {
		var gs, rs []string
		for _, run := range r.runs {
			gaps = append(gaps, ms(run.gap))
			refused = append(refused, float64(run.refused))
			gs = append(gs, fmt.Sprintf("%.0f", ms(run.gap)))
			rs = append(rs, fmt.Sprint(run.refused))
		}
		dups += r.dups
		fmt.Fprintf(w, "%d\t%.0f\t%v\t%v\t%d\n", i+1, ms(r.downtime), gs, rs, r.dups)
	}
	fmt.Fprintf(w, "median\t\t%.0f (max %.0f)\t%.0f (max %.0f)\t%d in all\n", median(gaps), slices.Max(gaps), median(refused), slices.Max(refused), dups)
	w.Flush()
	return dups == 0
}

// restartOnce runs one round on a server of its own, at a TTL of ttl: the
// holders take their IDs skew past one of Redis's whole seconds, and it
// restarts at into their renewal period.
func restartOnce(tb testing.TB, ttl, skew, at time.Duration) restartRound {
	srv := redistest.Start(tb)
	srv.WaitUptime(ttl + 2*restartBound) // past the restart floor: the takes are at once
	time.Sleep(skew)
	var (
		mu   sync.Mutex
		seen = map[ringflake.ID]bool{}
		r    restartRound
	)
	r.runs = make([]restartRun, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range r.runs {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
		tb.Cleanup(func() { _ = c.Close() })
		h, err := machineid_redis.New(c, machineid.WithRange(0, 1), machineid.WithTTL(ttl))
		if err != nil {
			tb.Fatalf("machineid_redis.New: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(-1))
		cancel()
		if err != nil {
			tb.Fatalf("ringflake.New: %v", err)
		}
		tb.Cleanup(func() { _ = g.Close() })
		run := &r.runs[i]
		wg.Go(func() {
			var last time.Time
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := g.NextID()
				now := time.Now()
				if err != nil {
					run.refused++
				} else {
					mu.Lock()
					if seen[id] {
						r.dups++
					}
					seen[id] = true
					mu.Unlock()
					if !last.IsZero() && now.Sub(last) > run.gap {
						run.gap = now.Sub(last)
					}
					last = now
					run.issued++
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	// at into the renewal period, once the holders have renewed once,
	// TTL/3 after their takes.
	time.Sleep(ttl/3 + at)
	down := time.Now()
	srv.Stop()
	srv.Restart()
	r.downtime = time.Since(down)
	// Past the ride's ceiling and the new holding's floor, with room.
	time.Sleep(ttl + restartBound + ttl)
	close(stop)
	wg.Wait()
	return r
}
