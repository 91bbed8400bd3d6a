package ringflake_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
)

// FuzzGeneratorUnique turns fuzz bytes into a clock (a walk of tick
// positions, each reading taken by the next caller) and a number of
// concurrent callers, and checks that no ID repeats, that every ID carries
// the machine ID, that failures are only the clock's, and that a single
// caller under a clock that has never gone back gets increasing IDs.
func FuzzGeneratorUnique(f *testing.F) {
	f.Add([]byte{0, 3, 7, 1, 1, 1, 1, 0, 0, 0})
	f.Add([]byte{3, 1, 5, 2, 0xF0, 0x01, 0x90, 0x10, 0x00, 0x00})
	f.Add([]byte{7, 15, 31, 0x80, 0x7F, 0x80, 0x7F, 0x01, 0x01})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		goroutines := 1 + int(data[0]%8)
		ring := 1 + int(data[1]%16)
		machine := int64(data[2] % 32)
		steps := data[3:]
		// Readings: cumulative signed steps in quarter ticks, so the walk
		// lands inside ticks as well as on their edges.
		readings := make([]time.Time, len(steps))
		pos := int64(4 * 1000)
		for i, s := range steps {
			pos = max(pos+int64(int8(s)), 0)
			readings[i] = at(0, time.Duration(pos)*tiny.Tick/4)
		}
		clock := &readClock{f: func(k int64) time.Time { return readings[k%int64(len(readings))] }}
		g, err := ringflake.New(ringflake.WithLayout(tiny), ringflake.WithMachineID(machine),
			ringflake.WithClock(clock.Now), ringflake.WithRingSize(ring), ringflake.WithMaxWait(0))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		perG := 2 * len(readings) / goroutines
		type issued struct {
			call int
			id   ringflake.ID
		}
		got := make([][]issued, goroutines)
		var eg errgroup.Group
		for i := range goroutines {
			eg.Go(func() error {
				for k := range perG {
					id, err := g.NextID()
					if err == nil {
						got[i] = append(got[i], issued{k, id})
						continue
					}
					if !errors.Is(err, ringflake.ErrClockBehind) && !errors.Is(err, ringflake.ErrSequenceExhausted) {
						return err
					}
				}
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			t.Fatalf("unexpected failure: %v", err)
		}
		seen := make(map[ringflake.ID]bool)
		for _, list := range got {
			for _, is := range list {
				if seen[is.id] {
					t.Fatalf("ID %d issued twice: %+v", is.id, tiny.Decompose(is.id))
				}
				seen[is.id] = true
				if p := tiny.Decompose(is.id); p.Machine != machine || is.id <= 0 {
					t.Fatalf("ID %d = %+v; want machine %d and a positive ID", is.id, p, machine)
				}
			}
		}
		if goroutines > 1 {
			return
		}
		// One caller and MaxWait 0: call k read the clock once, and saw
		// readings[k]. While the readings have not gone back, IDs increase.
		var last ringflake.ID
		for _, is := range got[0] {
			if is.call >= len(readings) {
				break
			}
			if is.call > 0 && slicesGoBack(readings[:is.call+1]) {
				break
			}
			if is.id <= last {
				t.Fatalf("call %d: ID %d not above the previous %d under a clock that has not gone back", is.call, is.id, last)
			}
			last = is.id
		}
	})
}

// slicesGoBack reports whether any reading is earlier than the one before.
func slicesGoBack(ts []time.Time) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i].Before(ts[i-1]) {
			return true
		}
	}
	return false
}

// FuzzLayoutRoundTrip checks that Compose and Decompose are inverses for
// every valid layout and in-range parts, that Compose refuses out-of-range
// parts, and that nothing panics on invalid layouts.
func FuzzLayoutRoundTrip(f *testing.F) {
	f.Add(uint8(41), uint8(10), int64(91332060678), int64(7), int64(2202), int64(1704067200), int64(time.Millisecond))
	f.Add(uint8(1), uint8(0), int64(1), int64(0), int64(1<<61), int64(0), int64(1))
	f.Add(uint8(61), uint8(1), int64(1<<61-1), int64(1), int64(1), int64(-1<<33), int64(time.Hour))
	f.Add(uint8(0), uint8(0), int64(-1), int64(-1), int64(-1), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, timeBits, machineBits uint8, ticks, machine, seq, epochSec, tickNs int64) {
		l := ringflake.Layout{
			TimeBits: int(timeBits % 64), MachineBits: int(machineBits % 64),
			Epoch: time.Unix(epochSec%(1<<34), 0).UTC(), Tick: time.Duration(tickNs),
		}
		l.SequenceBits = 63 - l.TimeBits - l.MachineBits
		valid := l.Validate() == nil
		id, err := l.Compose(ringflake.Parts{Ticks: ticks, Machine: machine, Sequence: seq})
		if !valid {
			if err == nil {
				t.Fatalf("Compose on invalid layout %+v succeeded", l)
			}
			_ = l.Decompose(ringflake.ID(ticks)) // must not panic
			return
		}
		fits := ticks >= 0 && ticks < int64(1)<<l.TimeBits &&
			machine >= 0 && machine <= l.MaxMachine() && seq >= 0 && seq <= l.MaxSequence()
		if !fits {
			if !errors.Is(err, ringflake.ErrInvalidConfig) {
				t.Fatalf("Compose(%d,%d,%d) under %+v = %v; want ErrInvalidConfig", ticks, machine, seq, l, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Compose(%d,%d,%d) under %+v: %v", ticks, machine, seq, l, err)
		}
		if id < 0 {
			t.Fatalf("Compose gave negative ID %d", id)
		}
		p := l.Decompose(id)
		if p.Ticks != ticks || p.Machine != machine || p.Sequence != seq {
			t.Fatalf("Decompose(Compose(%d,%d,%d)) = %+v", ticks, machine, seq, p)
		}
		if ticks <= l.MaxTicks() && !p.Time.Equal(l.Epoch.Add(time.Duration(ticks)*l.Tick)) {
			t.Fatalf("Decompose time = %v; want epoch + %d×%v", p.Time, ticks, l.Tick)
		}
	})
}
