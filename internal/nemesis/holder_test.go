package nemesis

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/machineid"
)

// holderEnv names the variable that makes the test binary a holder: it then
// runs hold with the JSON config the variable holds, and no test.
const holderEnv = "NEMESIS_HOLDER"

// holderConfig is what the harness tells a holder process.
type holderConfig struct {
	Store     string        // a key of stores
	Target    string        // how to reach the store: an address, a DSN, a kubeconfig, a directory
	Out       string        // the file the records are appended to
	LeaseFile string        // the file the holder's lease is written to (status), on each change
	ClockFile string        // the holder's clock offset, in ns, as decimal text
	Mutant    string        // internal/mutant's name to switch on, "" for none
	TTL       time.Duration // machineid.WithTTL
	Margin    time.Duration // machineid.WithSafetyMargin
	Bound     time.Duration // machineid.WithMaxClockOffset
	Lo, Hi    int64         // machineid.WithRange
}

// options are the machineid options every store's holder gets.
func (c holderConfig) options() []machineid.Option {
	return []machineid.Option{
		machineid.WithRange(c.Lo, c.Hi), machineid.WithTTL(c.TTL),
		machineid.WithSafetyMargin(c.Margin), machineid.WithMaxClockOffset(c.Bound),
	}
}

// A record is one ID as a holder issued it, with the After of the holding it
// was issued under (0: none known), in recordSize bytes, little endian.
const recordSize = 16

// hold is a holder process: it takes a machine ID through the store's real
// machineid.Holder, feeds a real generator with it, and issues IDs until
// SIGTERM, when it closes the generator (releasing the lease) and exits.
// Each batch of IDs is written with one write(2), so a kill -9 loses only
// IDs not yet written, which the checks then never see: a lost record can
// hide a repeat, never invent one.
func hold(env string) int {
	var cfg holderConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "nemesis holder:", err)
		return 2
	}
	if !mutant.Set(cfg.Mutant) {
		fmt.Fprintf(os.Stderr, "nemesis holder: mutant %q needs a build with -tags ringflake_mutant\n", cfg.Mutant)
		return 2
	}
	out, err := os.OpenFile(cfg.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis holder:", err)
		return 2
	}
	defer out.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	clock := followClock(ctx, cfg.ClockFile)
	for ctx.Err() == nil {
		if err := holdOnce(ctx, cfg, clock, out); err != nil {
			fmt.Fprintf(os.Stderr, "%s nemesis holder: %v\n", time.Now().Format("15:04:05.000"), err)
			sleep(ctx, 100*time.Millisecond)
		}
	}
	return 0
}

// holdOnce makes one store client, Holder and generator, and issues until
// ctx ends; then it closes the generator, which releases the lease.
func holdOnce(ctx context.Context, cfg holderConfig, clock func() time.Time, out *os.File) error {
	l, closeClient, err := stores[cfg.Store].leaser(cfg)
	if err != nil {
		return err
	}
	defer closeClient()
	// Watched from before New, which waits for the lease's After.
	unwatch := l.Watch(func(l machineid.Lease) { writeStatus(cfg.LeaseFile, l) })
	defer writeStatus(cfg.LeaseFile, machineid.Lease{ID: -1})
	defer unwatch()
	nctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	g, err := ringflake.New(nctx, ringflake.WithMachineIDSource(l), ringflake.WithClock(clock))
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s nemesis holder: holding %+v\n", time.Now().Format("15:04:05.000"), g.Lease())
	issue(ctx, g, out)
	return g.Close()
}

// A status is a holder's lease as the harness reads it, to aim the faults
// that follow one holding (redis_test.go's issue 36 worlds): the ID, and
// the marks in ns since the epoch (0: none).
type status struct {
	ID           int64
	Held         bool
	After, Until int64
}

// writeStatus replaces file with l's status, by a rename, so that a reader
// never sees half of one.
func writeStatus(file string, l machineid.Lease) {
	st := status{ID: l.ID, Held: l.Held}
	if !l.After.IsZero() {
		st.After = l.After.UnixNano()
	}
	if !l.Until.IsZero() {
		st.Until = l.Until.UnixNano()
	}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(file+".tmp", b, 0o644); err == nil {
		_ = os.Rename(file+".tmp", file)
	}
}

// issue calls NextN for batches of 8 IDs, about one batch a millisecond,
// and appends each ID with its holding's After to out. The holding is read
// before and after the call: if it changed between, an ID gets the lower
// After of the two holdings of its machine ID, which cannot make a correct
// ID look wrong.
func issue(ctx context.Context, g *ringflake.Generator, out *os.File) {
	layout := g.Layout()
	ids := make([]ringflake.ID, 8)
	buf := make([]byte, 0, len(ids)*recordSize)
	var last time.Time
	for ctx.Err() == nil {
		before := g.Lease()
		n, err := g.NextN(ids)
		after := g.Lease()
		buf = buf[:0]
		for _, id := range ids[:n] {
			a := afterOf(layout.Decompose(id).Machine, before, after)
			buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(a))
		}
		if n > 0 {
			if _, werr := out.Write(buf); werr != nil {
				fmt.Fprintln(os.Stderr, "nemesis holder:", werr)
				os.Exit(2)
			}
		}
		if err != nil {
			// The first error of a run of them, then one a second.
			if now := time.Now(); now.Sub(last) >= time.Second {
				fmt.Fprintf(os.Stderr, "%s nemesis holder: %v\n", now.Format("15:04:05.000"), err)
				last = now
			}
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		last = time.Time{}
		time.Sleep(time.Millisecond)
	}
}

// afterOf returns the After, in ns since the epoch, of the holding of
// machine among the two read around a call: the lower when both are of it,
// 0 (no check) when neither is, or one has none.
func afterOf(machine int64, a, b machineid.Lease) int64 {
	best, found := int64(0), false
	for _, l := range []machineid.Lease{a, b} {
		if l.ID != machine {
			continue
		}
		if l.After.IsZero() {
			return 0
		}
		if ns := l.After.UnixNano(); !found || ns < best {
			best, found = ns, true
		}
	}
	return best
}

// followClock returns the holder's clock: time.Now plus the offset the
// harness writes in file, read every 10 ms, so that the harness can step
// the clock of a running holder either way (ringflake.WithClock, which the
// generator hands to its machineid.Holder: one clock for both).
func followClock(ctx context.Context, file string) func() time.Time {
	var offset atomic.Int64
	read := func() {
		b, err := os.ReadFile(file)
		var ns int64
		if err == nil && len(b) > 0 {
			if _, err := fmt.Sscan(string(b), &ns); err == nil {
				offset.Store(ns)
			}
		}
	}
	read()
	go func() {
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			read()
		}
	}()
	return func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
