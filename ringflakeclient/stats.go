package ringflakeclient

import "time"

// Stats counts what a Client did since New, and shows each server now.
type Stats struct {
	Served    uint64 // IDs NextID returned
	Fetched   uint64 // IDs received from the servers
	Dropped   uint64 // IDs dropped as older than the maximum age
	Failovers uint64 // times a server that was ready failed a call, or said it was not ready
	Buffered  int    // IDs in the buffer now
	Waits     Waits
	Servers   []ServerStats // in the order New was given the targets
}

// Waits is a histogram of the NextID calls that found the buffer empty
// and waited, however their wait ended.
type Waits struct {
	Count   uint64
	Sum     time.Duration // the time they waited, in all
	Longest time.Duration
	Bounds  []time.Duration // the buckets' upper bounds, increasing
	Counts  []uint64        // Counts[i] is how many waited at most Bounds[i]
}

// ServerStats is one server's state and what it sent.
type ServerStats struct {
	Target string
	State  State
	Err    error  // its last failure, kept after it answers again; nil if none
	Blocks uint64 // blocks it sent
	IDs    uint64 // IDs it sent
}

// State is what a client knows of a server.
type State uint8

// The states of a server.
const (
	Connecting State = iota // not yet greeted: asked for its Info, no answer yet
	Ready                   // it answered, with a machine ID and the client's layout
	Acquiring               // not ready: it has no machine ID yet, or asked to be called again later
	Refused                 // it will not serve the client as it is: another layout, not the service, no permission
	Failing                 // it failed a call, or did not answer within the timeout
)

var stateNames = [...]string{"connecting", "ready", "acquiring", "refused", "failing"}

// String is the state in a word: "ready", "acquiring", ...
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// waitBounds are the upper bounds of the Waits buckets.
var waitBounds = [...]time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// waitCounts is the histogram of the waits, each counted in its bucket
// alone (not cumulative), and those past the last bound in none.
type waitCounts struct {
	counts       [len(waitBounds)]uint64
	count        uint64
	sum, longest time.Duration
}

func (w *waitCounts) add(d time.Duration) {
	w.count++
	w.sum += d
	w.longest = max(w.longest, d)
	for i, b := range waitBounds {
		if d <= b {
			w.counts[i]++
			return
		}
	}
}

// waits is w as a Waits, with cumulative counts.
func (w *waitCounts) waits() Waits {
	out := Waits{Count: w.count, Sum: w.sum, Longest: w.longest, Counts: make([]uint64, len(waitBounds))}
	out.Bounds = append([]time.Duration(nil), waitBounds[:]...)
	n := uint64(0)
	for i, k := range w.counts {
		n += k
		out.Counts[i] = n
	}
	return out
}

// Stats returns the client's counters and each server's state.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Buffered = c.count
	s.Waits = c.waits.waits()
	s.Servers = make([]ServerStats, len(c.servers))
	for i, v := range c.servers {
		s.Servers[i] = ServerStats{Target: v.target, State: v.state, Err: v.err, Blocks: v.blocks, IDs: v.ids}
	}
	return s
}
