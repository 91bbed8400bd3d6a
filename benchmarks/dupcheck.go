package main

import (
	"slices"
	"sync/atomic"
	"time"
)

// chunkLen is how many slots a worker reserves from a recorder at a time,
// so that recording costs one shared atomic add per chunkLen IDs.
const chunkLen = 1024

// empty marks a reserved slot that was never written; no peer issues a
// negative ID.
const empty = -1

// recorder keeps every ID of one run in a buffer allocated once for the
// whole process, so recording neither allocates nor locks. Workers reserve
// chunks with an atomic add; when the buffer is full, IDs are counted as
// unrecorded instead.
type recorder struct {
	buf  []int64
	used atomic.Int64 // slots reserved so far; may pass len(buf)
}

// newRecorder allocates the buffer and writes it once, so that no run pays
// for the page faults of touching it first.
func newRecorder(n int) *recorder {
	r := &recorder{buf: make([]int64, n)}
	for i := range r.buf {
		r.buf[i] = empty
	}
	return r
}

func (r *recorder) reset() { r.used.Store(0) }

// chunk reserves the next chunk, or returns nil when the buffer is full.
func (r *recorder) chunk() []int64 {
	end := r.used.Add(chunkLen)
	if end > int64(len(r.buf)) {
		return nil
	}
	return r.buf[end-chunkLen : end : end]
}

// ids returns the reserved part of the buffer; unwritten slots hold empty.
func (r *recorder) ids() []int64 {
	return r.buf[:min(r.used.Load(), int64(len(r.buf)))]
}

// tape is one worker's view of a recorder.
type tape struct {
	r          *recorder
	cur        []int64
	n          int
	unrecorded int64
}

func (t *tape) add(id int64) {
	if t.n == len(t.cur) {
		if t.cur = t.r.chunk(); t.cur == nil {
			t.unrecorded++
			return
		}
		t.n = 0
	}
	t.cur[t.n] = id
	t.n++
}

// close marks the rest of the worker's last chunk as empty.
func (t *tape) close() {
	for i := t.n; i < len(t.cur); i++ {
		t.cur[i] = empty
	}
	t.cur, t.n = nil, 0
}

// dupResult is the duplicate check of one generator over all its runs.
type dupResult struct {
	runs       int
	checked    int64
	unrecorded int64
	dups       int64
	overlaps   int           // pairs of runs whose ID ranges overlap
	lead       time.Duration // largest lead of an ID's time over the clock at the end of its run
	leadSet    bool
	spans      [][2]int64 // min and max ID of each run
}

// check sorts ids in place (tmp is scratch space, grown as needed), counts repeated IDs among them and records the
// run's range. The range check stands in for a check across runs: IDs are
// kept per run only, and runs whose ranges are disjoint cannot share an ID.
func (d *dupResult) check(ids []int64, unrecorded int64, p *peer, end time.Time, tmp *[]int64) {
	if len(*tmp) < len(ids) {
		*tmp = make([]int64, len(ids))
	}
	radixSort(ids, *tmp)
	i, _ := slices.BinarySearch(ids, 0) // skip empty slots
	ids = ids[i:]
	d.runs++
	d.unrecorded += unrecorded
	d.checked += int64(len(ids))
	for j := 1; j < len(ids); j++ {
		if ids[j] == ids[j-1] {
			d.dups++
		}
	}
	if len(ids) == 0 {
		return
	}
	lo, hi := ids[0], ids[len(ids)-1]
	for _, s := range d.spans {
		if lo <= s[1] && s[0] <= hi {
			d.overlaps++
		}
	}
	d.spans = append(d.spans, [2]int64{lo, hi})
	if lead := p.timeOf(hi).Sub(end); !d.leadSet || lead > d.lead {
		d.lead, d.leadSet = lead, true
	}
}
