package main

import (
	"context"
	"fmt"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"
	godruoyi "github.com/godruoyi/go-snowflake"
	"github.com/ringflake/ringflake"
	sonyflake "github.com/sony/sonyflake"
	sonyflakev2 "github.com/sony/sonyflake/v2"
	"github.com/yitter/idgenerator-go/idgen"
)

// A peer is one ID generator under test, reached through its public API.
type peer struct {
	name    string
	tick    time.Duration // the time field's unit
	perTick int           // IDs one tick can hold, from the generator's configuration
	mutex   bool          // serializes callers with a mutex
	note    string        // printed under the tables
	// next issues one ID; ok is false if the generator returned an error.
	next func() (id int64, ok bool)
	// timeOf decodes the time field of an ID.
	timeOf func(id int64) time.Time
}

// ceiling is the most IDs per second the layout allows: IDs per tick times
// ticks per second.
func (p *peer) ceiling() float64 {
	return float64(p.perTick) * float64(time.Second) / float64(p.tick)
}

// epoch is the start of time for the peers that take one.
var epoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

const machineID = 1

// newPeers builds every generator once; each is shared by all rounds, as a
// process would share it. Peers whose construction fails are reported and
// left out.
func newPeers() ([]*peer, []string) {
	builders := []func() (*peer, error){
		newRingflake, newBwmarrin, newSonyflake, newSonyflakeV2,
		newGodruoyi, newYitter, newMutexPeer, newStdUUID, newGoogleUUID,
	}
	var peers []*peer
	var skipped []string
	for _, b := range builders {
		p, err := b()
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		peers = append(peers, p)
	}
	return peers, skipped
}

func newRingflake() (*peer, error) {
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(machineID))
	if err != nil {
		return nil, fmt.Errorf("ringflake: %w", err)
	}
	l := g.Layout()
	return &peer{
		name:    "ringflake",
		tick:    l.Tick,
		perTick: 1 << l.SequenceBits,
		next: func() (int64, bool) {
			id, err := g.NextID()
			return int64(id), err == nil
		},
		timeOf: func(id int64) time.Time { return l.Decompose(ringflake.ID(id)).Time },
	}, nil
}

func newBwmarrin() (*peer, error) {
	n, err := bwmarrin.NewNode(machineID)
	if err != nil {
		return nil, fmt.Errorf("bwmarrin/snowflake: %w", err)
	}
	return &peer{
		name:    "bwmarrin/snowflake",
		tick:    time.Millisecond,
		perTick: 1 << bwmarrin.StepBits,
		mutex:   true,
		note:    "reads only the monotonic clock: a wall-clock step is never seen",
		next:    func() (int64, bool) { return n.Generate().Int64(), true },
		timeOf:  func(id int64) time.Time { return time.UnixMilli(bwmarrin.ParseInt64(id).Time()) },
	}, nil
}

func newSonyflake() (*peer, error) {
	sf, err := sonyflake.New(sonyflake.Settings{
		StartTime: epoch,
		MachineID: func() (uint16, error) { return machineID, nil },
	})
	if err != nil {
		return nil, fmt.Errorf("sony/sonyflake: %w", err)
	}
	return &peer{
		name:    "sony/sonyflake",
		tick:    10 * time.Millisecond,
		perTick: 1 << sonyflake.BitLenSequence,
		mutex:   true,
		note:    "v1 is fixed at 10 ms ticks and 8 bits of sequence: 25.6k IDs/s at most",
		next: func() (int64, bool) {
			id, err := sf.NextID()
			return int64(id), err == nil
		},
		timeOf: func(id int64) time.Time { return epoch.Add(sonyflake.ElapsedTime(uint64(id))) },
	}, nil
}

func newSonyflakeV2() (*peer, error) {
	const seqBits = 12
	sf, err := sonyflakev2.New(sonyflakev2.Settings{
		BitsSequence:  seqBits,
		BitsMachineID: 10,
		TimeUnit:      time.Millisecond,
		StartTime:     epoch,
		MachineID:     func() (int, error) { return machineID, nil },
	})
	if err != nil {
		return nil, fmt.Errorf("sony/sonyflake/v2: %w", err)
	}
	return &peer{
		name:    "sony/sonyflake/v2",
		tick:    time.Millisecond,
		perTick: 1 << seqBits,
		mutex:   true,
		note:    "configured to 1 ms ticks, 10 machine bits, 12 sequence bits",
		next:    func() (int64, bool) { id, err := sf.NextID(); return id, err == nil },
		timeOf:  sf.ToTime,
	}, nil
}

func newGodruoyi() (*peer, error) {
	// go-snowflake keeps its settings in package variables; this is the
	// only user of the package in the process.
	godruoyi.SetMachineID(machineID)
	return &peer{
		name: "godruoyi/go-snowflake",
		tick: time.Millisecond,
		// A sequence of MaxSequence makes the caller wait for the next
		// millisecond, so 0..MaxSequence-1 are issued.
		perTick: int(godruoyi.MaxSequence),
		note:    "lock-free: one CAS on the time and another on the sequence, not atomic together, so duplicates are possible; spins for the next millisecond",
		next: func() (int64, bool) {
			id, err := godruoyi.NextID()
			return int64(id), err == nil
		},
		timeOf: func(id int64) time.Time {
			sid := godruoyi.ParseID(uint64(id))
			return sid.GenerateTime()
		},
	}, nil
}

func newYitter() (p *peer, err error) {
	const seqBits, minSeq = 12, 5
	opts := idgen.NewIdGeneratorOptions(machineID)
	opts.WorkerIdBitLength = 10
	opts.SeqBitLength = seqBits
	opts.MinSeqNumber = minSeq
	opts.BaseTime = epoch.UnixMilli()
	defer func() { // the constructor panics on bad options
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("yitter/idgenerator-go: %v", r)
		}
	}()
	g := idgen.NewDefaultIdGenerator(opts)
	return &peer{
		name: "yitter/idgenerator-go",
		tick: time.Millisecond,
		// Sequences below MinSeqNumber are reserved for clock rollback.
		perTick: 1<<seqBits - minSeq,
		mutex:   true,
		note: "borrows future time: when a millisecond's sequence runs out it moves on to the next " +
			"millisecond at once (up to TopOverCostCount=2000 ahead), so it can beat the ceiling and " +
			"its IDs can run ahead of the clock",
		next:   func() (int64, bool) { return g.NewLong(), true },
		timeOf: g.ExtractTime,
	}, nil
}

func newMutexPeer() (*peer, error) {
	g := newMutexGen(machineID)
	return &peer{
		name:    "mutex reference",
		tick:    time.Millisecond,
		perTick: 1 << mutexSeqBits,
		mutex:   true,
		note:    "a plain sync.Mutex around time.Now and a counter (mutexgen.go)",
		next:    func() (int64, bool) { return g.next(), true },
		timeOf:  func(id int64) time.Time { return epoch.Add(time.Duration(id>>22) * time.Millisecond) },
	}, nil
}
