package machineid_zookeeper

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ringflake/ringflake/machineid"
)

// ZooKeeper stamps every write with its leader's clock, to the
// millisecond: a node's mtime. So the mark that every take and renewal
// writes reads ZooKeeper's clock at an instant within the call, which is
// the reference a holder's clock is checked against, as the API server's
// is for Kubernetes. A failover changes the leader, and so the clock read.
//
// A leader's clock can be off too, so a take also compares, as Meituan's
// Leaf does, with the live holders' recent reports: each holding measures
// its clock's offset from ZooKeeper's at every take and renewal, and writes
// it with the next renewal into its owner node, which lives as long as
// its session. A take reads up to three other holders' reports, and the
// reference is the median of ZooKeeper's clock and theirs (each ZooKeeper's
// clock plus its offset), where, of two middle values, the one nearer to
// ZooKeeper's. So with two reports or more, one wrong clock, the leader's
// or a holder's, does not move it; with none or one, ZooKeeper's clock is
// the reference.

// zkSource names ZooKeeper's clock in messages; every source here names it.
const zkSource = "ZooKeeper's clock (a write's mtime)"

// reports is how many other holders' reports a take reads.
const reports = 3

// measure returns ZooKeeper's clock as read from ms, the stat of a write
// whose round trip, counted from before c.Now was read, was rtt; and keeps
// the offset of the holder's clock from it for the holding's next report.
// mtime is truncated to the millisecond, so it is read as its middle.
func (h *holding) measure(c machineid.Claim, ms *zk.Stat, rtt time.Duration) machineid.Reading {
	zkTime := time.UnixMilli(ms.Mtime).Add(time.Millisecond / 2)
	h.offset, h.within = c.Now.Add(rtt/2).Sub(zkTime), rtt/2+time.Millisecond/2
	return machineid.Reading{Source: zkSource, Time: zkTime, Within: time.Millisecond / 2}
}

// report is a clock's offset from ZooKeeper's, within an uncertainty.
type report struct{ offset, within time.Duration }

// reports reads the clock reports of up to three holders among owners,
// other than of id, at once, for half of what is left of ctx and a second
// at most: they must not make the take they serve late. It leaves out what
// does not come in time, and holders that have not reported yet.
func (s *store) reports(ctx context.Context, sess *session, id int64, owners []string) []report {
	others := slices.DeleteFunc(slices.Clone(owners), func(n string) bool { return n == strconv.FormatInt(id, 10) })
	rand.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	others = others[:min(len(others), reports)]
	ctx, cancel := briefly(ctx)
	defer cancel()
	got := make([]report, len(others))
	var wg sync.WaitGroup
	for i, n := range others {
		wg.Go(func() {
			data, _, err := sess.get(ctx, s.prefix+"/owner/"+n)
			var rec record
			if err == nil && json.Unmarshal(data, &rec) == nil && rec.Within > 0 {
				got[i] = report{time.Duration(rec.Offset), time.Duration(rec.Within)}
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(got, func(r report) bool { return r.within == 0 })
}

// reference is a take's reference clock: own, ZooKeeper's clock, or the
// median of it and the other holders' reports (see above).
func reference(own machineid.Reading, others []report) machineid.Reading {
	all := append([]report{{0, own.Within}}, others...)
	m := median(all)
	if m == all[0] {
		return own
	}
	return machineid.Reading{
		Source: fmt.Sprintf("the median of ZooKeeper's clock and %d live holders' clocks", len(others)),
		Time:   own.Time.Add(m.offset),
		Within: own.Within + m.within,
	}
}

// median returns the middle of rs by offset, where rs[0] is ZooKeeper's
// own (offset 0); of two middle ones, the one nearer to ZooKeeper's.
func median(rs []report) report {
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b report) int { return cmp.Compare(a.offset, b.offset) })
	if len(sorted)%2 == 1 {
		return sorted[len(sorted)/2]
	}
	a, b := sorted[len(sorted)/2-1], sorted[len(sorted)/2]
	if abs(b.offset) < abs(a.offset) {
		return b
	}
	return a
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// briefly bounds the reads of holders' reports to half of what is left of
// ctx, and a second: they are worth having, but must not make the take
// they serve late.
func briefly(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := time.Second
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)/2)
	}
	return context.WithTimeout(ctx, limit)
}
