package machineid_file

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// stallFS is the real disk, whose fsyncs of files hang while stalled: a
// disk under load, or a network volume that stops answering.
type stallFS struct {
	stalling atomic.Bool
	mu       sync.Mutex    // protects the fields below
	stalled  chan struct{} // closed when a Sync first hangs
	resume   chan struct{} // closed when the stall ends
	durable  time.Time     // the mark of machine ID 0 as the last completed Sync left it
}

func newStallFS() *stallFS {
	return &stallFS{stalled: make(chan struct{}), resume: make(chan struct{})}
}

func (d *stallFS) OpenFile(name string, flag int, perm fs.FileMode) (fsFile, error) {
	f, err := osFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &stallFile{fsFile: f, d: d}, nil
}

func (d *stallFS) Mkdir(name string, perm fs.FileMode) error { return osFS{}.Mkdir(name, perm) }

// end ends the stall: the hung fsyncs go on.
func (d *stallFS) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stalling.CompareAndSwap(true, false) {
		close(d.resume)
	}
}

type stallFile struct {
	fsFile
	d *stallFS
}

func (f *stallFile) Sync() error {
	if f.d.stalling.Load() {
		f.d.mu.Lock()
		select {
		case <-f.d.stalled:
		default:
			close(f.d.stalled)
		}
		f.d.mu.Unlock()
		<-f.d.resume
	}
	err := f.fsFile.Sync()
	if b, rerr := os.ReadFile(f.Name()); err == nil && rerr == nil && filepath.Base(f.Name()) == "machine-0" {
		if st, perr := parseFile(b, 0); perr == nil && st.slot >= 0 {
			f.d.mu.Lock()
			f.d.durable = st.last.until
			f.d.mu.Unlock()
		}
	}
	return err
}

// mark returns the mark of machine ID 0 that the last completed Sync made
// durable.
func (d *stallFS) mark() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.durable
}

// TestStalledSyncKeepsIssuing stalls a renewal's fsync for longer than the
// TTL. No one can take the ID meanwhile (the process holds its file's
// lock), so the generator must go on issuing up to the mark last made
// durable, and never past it, and issue again once the disk answers.
func TestStalledSyncKeepsIssuing(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second // renewals every 1s; the margin is 600ms
	d := newStallFS()
	s := &store{disk: d, dir: t.TempDir(), sem: make(chan struct{}, 1), host: "test"}
	var set settings
	h, err := machineid.NewHolder(s, &set, limits, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	require.NoError(t, err)
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(h))
	require.NoError(t, err)
	t.Cleanup(func() {
		d.end()
		_ = g.Close()
	})
	_, err = g.NextID()
	require.NoError(t, err)

	d.stalling.Store(true)
	<-d.stalled
	// The renewal whose fsync hangs has written its mark, but not made it
	// durable: the mark synced before is the latest the generator may
	// issue at.
	mark := d.mark()
	require.False(t, g.Lease().Until.After(mark), "the lease's Until %v is past the mark on disk %v", g.Lease().Until, mark)
	end := time.Now().Add(ttl + 500*time.Millisecond)
	layout := g.Layout()
	var late int // IDs issued within 400ms of the mark: past TTL − margin of the last renewal
	for time.Now().Before(end) {
		now := time.Now()
		id, err := g.NextID()
		switch {
		case err == nil:
			at := layout.Decompose(id).Time
			require.False(t, at.After(mark), "ID %d issued at %v, past the mark on disk %v", id, at, mark)
			if now.After(mark.Add(-400 * time.Millisecond)) {
				late++
			}
		case now.Before(mark.Add(-200 * time.Millisecond)):
			require.NoError(t, err, "NextID %v before the mark on disk, while a renewal's fsync hangs", mark.Sub(now))
		default:
			require.ErrorIs(t, err, ringflake.ErrLeaseLost, "past the mark, with the renewal hung")
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.Positive(t, late, "no ID issued within 400ms of the mark: the generator stopped before it")
	d.end()
	require.Eventually(t, func() bool { _, err := g.NextID(); return err == nil }, 5*time.Second, 10*time.Millisecond,
		"the generator issues again once the disk answers")
}
