package machineid_file

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
)

// The crash test runs the lives of two holders through the store's real
// code on a real directory, and records every change the store makes to
// the disk through its fileSystem: each directory and file it creates, each
// write, each fsync of a file or a directory. At every point of those lives
// it enumerates what a power loss could leave on the disk, and reads each
// state back as the next holder would. A state keeps what was synced, plus
// any of the changes since:
//   - a name made in a directory (a file, or the state directory itself)
//     persists only once its directory was synced since, else it may or
//     may not;
//   - each unsynced write reaches the disk in 512-byte sectors, each sector
//     as before or as written independently of the others (a write torn at
//     sector boundaries), and a sector may be shorn: its first bytes
//     written, the rest as before (a sector that is not atomic, as some
//     devices' are not on power loss);
//   - a file that grew keeps its old length, its new one, or any sector
//     boundary between; within its first sector past the old length, any
//     length at all (a small file: its size persisted ahead of its data, or
//     behind it). Bytes past the old length that no chosen write covers
//     read as zeros, as a hole does.
//
// Each state must read as a mark at or above the latest time the holders
// may have issued at by then (the Until last confirmed to a holder, or
// what its Release said it issued), or be refused with ErrCorrupt; a lower
// mark would let the next holder repeat IDs.
//
// The store's mutants (mutant.go) must each fail it:
//
//	go test ./machineid_file -run 'TestCrashStates$' -args -mutant=nosync
var mutantFlag = flag.String("mutant", "", "run TestCrashStates with the store broken as this mutant says (mutant.go): "+mutantNames())

func mutantNames() string {
	var names []string
	for name := range mutants {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// TestCrashStates checks every state a power loss could leave during two
// holders' lives, for the store as built (or with -mutant, as broken).
func TestCrashStates(t *testing.T) {
	t.Parallel()
	m, ok := mutants[*mutantFlag]
	require.True(t, ok || *mutantFlag == "", "-mutant=%s: no such mutant; there are %s", *mutantFlag, mutantNames())
	events, path := live(t, m)
	// The lives did what the check needs: a directory and a file made,
	// marks written and synced, the directory synced.
	count := map[evKind]int{}
	for _, e := range events {
		count[e.kind]++
	}
	require.Equal(t, 1, count[evMkdir], "the state directory made")
	require.Equal(t, 1, count[evCreate], "the file made")
	require.GreaterOrEqual(t, count[evWrite], 9, "a write per grant, and the release's")
	require.GreaterOrEqual(t, count[evBound], 9, "the holders' grants and the release")
	t.Logf("the lives, as the store changed the disk:\n%s", logText(events))

	r := check(events, path)
	if r.violation != nil {
		t.Fatalf("%v", r.violation)
	}
	assert.Greater(t, r.states, 4*r.points, "torn and partial writes enumerated, not only the synced states")
	// Refusing is safe, but leaves the ID to an operator: none of these
	// states needs one (a first write torn within the magic did).
	assert.Zero(t, r.refused, "states a power loss could leave that Take refuses with ErrCorrupt")
	t.Logf("%d crash points, %d states a power loss could leave: every one reads a mark at or above what the holders may have issued; %d refused with ErrCorrupt",
		r.points, r.states, r.refused)
}

// TestCrashStatesCatchMutants runs the crash test with each of the store's
// mutants, and requires it to fail: a store that does not fsync its file or
// its directory, that grants a mark before it writes it, that writes the
// mark over the only intact copy, or that overwrites a slot before the mark
// it read (a release's, not fsynced) is durable.
func TestCrashStatesCatchMutants(t *testing.T) {
	t.Parallel()
	for name, m := range mutants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			events, path := live(t, m)
			r := check(events, path)
			require.NotNil(t, r.violation, "the crash test passed a store broken with mutant %s (%d crash points, %d states)", name, r.points, r.states)
			t.Logf("caught: %v", r.violation)
		})
	}
}

// live runs two holders' lives on machine ID 0's file in a new state
// directory, each store broken as m says, and returns the events
// recorded, and the file's path. The first holder takes the ID, renews it
// three times and releases it with what it issued; the second inherits the
// mark, renews three times, and is still holding the ID at the end.
func live(t *testing.T, m mutant) ([]event, string) {
	dir := filepath.Join(t.TempDir(), "state")
	rec := &recorder{}
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	now := time.Unix(1_800_000_000, 0)
	may := map[string]time.Time{} // by holder: the latest time it may have issued at
	bound := func(token string, at time.Time, what string) {
		may[token] = at
		b := time.Time{}
		for _, at := range may {
			if at.After(b) {
				b = at
			}
		}
		rec.add(event{kind: evBound, at: b, what: what})
	}
	var last *store
	for _, token := range []string{"first", "second"} {
		s := &store{disk: rec, dir: dir, sem: make(chan struct{}, 1), host: "test", mutant: m}
		last = s
		c := machineid.Claim{Token: token, Lo: 0, Hi: 0, TTL: ttl, Margin: ttl / 5, Until: now.Add(ttl)}
		g, err := s.Take(ctx, c)
		require.NoError(t, err)
		bound(token, g.Until, token+"'s Take granted")
		for i := range 3 {
			now = now.Add(ttl / 3)
			c.Until = now.Add(ttl)
			g, err = s.Renew(ctx, c, g.ID)
			require.NoError(t, err)
			bound(token, g.Until, fmt.Sprintf("%s's renewal %d granted", token, i+1))
		}
		if token == "first" {
			// The latest ID it issued: near its mark, past the one it
			// was granted before, which is still in the other slot.
			issued := g.Until.Add(-ttl / 10)
			bound(token, issued, "first's Release(issued)")
			require.NoError(t, s.Release(ctx, c, g.ID, issued))
			now = now.Add(ttl)
		}
	}
	last.free()
	events := rec.events()
	// The model of the disk agrees with the disk.
	path := filepath.Join(dir, "machine-0")
	d := newDiskModel()
	for _, e := range events {
		d.apply(e)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, got, d.files[path].now, "the recorded writes make the file on disk")
	return events, path
}

// evKind is what an event is.
type evKind uint8

const (
	evMkdir  evKind = iota // a directory made
	evCreate               // a file made
	evWrite                // bytes written to a file at an offset
	evSync                 // a file or a directory fsynced
	evBound                // the latest time the holders may have issued at is now at
)

// event is one change the store made to the disk, or a change of what the
// holders may have issued.
type event struct {
	kind evKind
	path string
	off  int64
	data []byte
	at   time.Time // evBound
	what string    // evBound: why
}

func (e event) String() string {
	name := filepath.Base(e.path)
	switch e.kind {
	case evMkdir:
		return "mkdir " + name
	case evCreate:
		return "create " + name
	case evWrite:
		return fmt.Sprintf("write %s: %d bytes at %d", name, len(e.data), e.off)
	case evSync:
		return "fsync " + name
	}
	return fmt.Sprintf("%s: the holders may have issued up to %s", e.what, hms(e.at))
}

func logText(events []event) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "%3d %v\n", i+1, e)
	}
	return b.String()
}

// recorder is a fileSystem that does what the store asks on the real disk
// and records each change it makes.
type recorder struct {
	mu  sync.Mutex // protects log
	log []event
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, e)
}

func (r *recorder) events() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.log...)
}

func (r *recorder) OpenFile(name string, flag int, perm fs.FileMode) (fsFile, error) {
	_, statErr := os.Lstat(name)
	f, err := osFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 && errors.Is(statErr, fs.ErrNotExist) {
		r.add(event{kind: evCreate, path: name})
	}
	return &recFile{fsFile: f, r: r, path: name}, nil
}

func (r *recorder) Mkdir(name string, perm fs.FileMode) error {
	err := osFS{}.Mkdir(name, perm)
	if err == nil {
		r.add(event{kind: evMkdir, path: name})
	}
	return err
}

// recFile records the writes and syncs of a file that recorder opened.
type recFile struct {
	fsFile
	r    *recorder
	path string
}

func (f *recFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.fsFile.WriteAt(b, off)
	if n > 0 {
		f.r.add(event{kind: evWrite, path: f.path, off: off, data: bytes.Clone(b[:n])})
	}
	return n, err
}

func (f *recFile) Sync() error {
	err := f.fsFile.Sync()
	if err == nil {
		f.r.add(event{kind: evSync, path: f.path})
	}
	return err
}

// diskModel is what the events so far made durable on the disk, and what
// they changed that is not durable yet.
type diskModel struct {
	made    map[string]bool       // a name made by an event: true once its directory was synced since
	pending map[string][]string   // a directory's names made since it was last synced
	files   map[string]*fileModel // the files made by an event
}

// fileModel is a file's content: as of its last fsync, and as written since.
type fileModel struct {
	synced []byte
	writes []event // since the last fsync
	now    []byte
}

func newDiskModel() *diskModel {
	return &diskModel{made: map[string]bool{}, pending: map[string][]string{}, files: map[string]*fileModel{}}
}

func (d *diskModel) apply(e event) {
	switch e.kind {
	case evMkdir, evCreate:
		d.made[e.path] = false
		parent := filepath.Dir(e.path)
		d.pending[parent] = append(d.pending[parent], e.path)
		if e.kind == evCreate {
			d.files[e.path] = &fileModel{}
		}
	case evWrite:
		f := d.files[e.path]
		f.writes = append(f.writes, e)
		f.now = overwrite(f.now, int(e.off), e.data)
	case evSync:
		if f := d.files[e.path]; f != nil {
			f.synced, f.writes = bytes.Clone(f.now), nil
		}
		for _, p := range d.pending[e.path] {
			d.made[p] = true
		}
		delete(d.pending, e.path)
	}
}

// overwrite returns b with data written at off, grown with zeros if need be.
func overwrite(b []byte, off int, data []byte) []byte {
	if n := off + len(data); n > len(b) {
		b = append(b, make([]byte, n-len(b))...)
	}
	copy(b[off:], data)
	return b
}

// states calls fn with every content the file at path could have after a
// power loss now (nil: no file), and how it came about, until fn returns
// false; it returns false if fn did.
func (d *diskModel) states(path string, fn func(content []byte, how string) bool) bool {
	f := d.files[path]
	if f == nil {
		return fn(nil, "the file not made yet")
	}
	for p := path; p != filepath.Dir(p); p = filepath.Dir(p) {
		if durable, made := d.made[p]; made && !durable {
			if !fn(nil, "the name "+filepath.Base(p)+" lost: its directory was not synced since it was made") {
				return false
			}
			break
		}
	}
	return f.states(fn)
}

const sectorSize = 512

// sectorVersion is one content a sector of a file may have after a power loss.
type sectorVersion struct {
	b   []byte
	how string // "" for the synced content
}

// states calls fn with every content f could have after a power loss.
func (f *fileModel) states(fn func(content []byte, how string) bool) bool {
	sectors := f.sectors()
	for _, n := range f.lengths() {
		// Within the first sector past the old length, a length that is
		// neither a sector boundary nor the new length is itself the tear:
		// that sector as synced, or as last written.
		small := n%sectorSize != 0 && n != len(f.now)
		used := (n + sectorSize - 1) / sectorSize
		choice := make([]sectorVersion, used)
		var walk func(i int) bool
		walk = func(i int) bool {
			if i == used {
				var b []byte
				var hows []string
				if n != len(f.now) {
					hows = append(hows, fmt.Sprintf("length %d of %d", n, len(f.now)))
				}
				for j, v := range choice {
					b = append(b, v.b...)
					if v.how != "" {
						hows = append(hows, fmt.Sprintf("sector %d: %s", j, v.how))
					}
				}
				how := strings.Join(hows, "; ")
				if how == "" {
					how = "as synced"
				}
				return fn(b[:n], how)
			}
			vs := sectors[i]
			if small && i == used-1 && len(vs) > 2 {
				vs = []sectorVersion{vs[0], f.latest(i)}
			}
			for _, v := range vs {
				choice[i] = v
				if !walk(i + 1) {
					return false
				}
			}
			return true
		}
		if !walk(0) {
			return false
		}
	}
	return true
}

// lengths returns the lengths f may have after a power loss.
func (f *fileModel) lengths() []int {
	old, n := len(f.synced), len(f.now)
	if n <= old {
		return []int{n}
	}
	lengths := []int{old}
	edge := (old/sectorSize + 1) * sectorSize // the end of the first sector past old
	for l := old + 1; l <= min(edge, n); l++ {
		lengths = append(lengths, l)
	}
	for l := edge + sectorSize; l < n; l += sectorSize {
		lengths = append(lengths, l)
	}
	if lengths[len(lengths)-1] != n {
		lengths = append(lengths, n)
	}
	return lengths
}

// sectors returns the versions each sector of f may have: as synced (zeros
// past the synced length), as each unsynced write that covers it left it,
// and shorn: a write's first bytes in the sector, the rest as before it.
func (f *fileModel) sectors() [][]sectorVersion {
	n := len(f.now)
	img := make([]byte, n)
	copy(img, f.synced)
	out := make([][]sectorVersion, (n+sectorSize-1)/sectorSize)
	seen := make([]map[string]bool, len(out))
	add := func(i int, b []byte, how string) {
		if !seen[i][string(b)] {
			seen[i][string(b)] = true
			out[i] = append(out[i], sectorVersion{bytes.Clone(b), how})
		}
	}
	for i := range out {
		seen[i] = map[string]bool{}
		add(i, img[i*sectorSize:min((i+1)*sectorSize, n)], "")
	}
	for k, w := range f.writes {
		before := bytes.Clone(img)
		copy(img[w.off:], w.data)
		for i := range out {
			lo, hi := i*sectorSize, min((i+1)*sectorSize, n)
			wlo, whi := max(lo, int(w.off)), min(hi, int(w.off)+len(w.data))
			if wlo >= whi {
				continue
			}
			add(i, img[lo:hi], fmt.Sprintf("unsynced write %d", k+1))
			for cut := wlo + 1; cut < whi; cut++ {
				shorn := bytes.Clone(before[lo:hi])
				copy(shorn[wlo-lo:], img[wlo:cut])
				add(i, shorn, fmt.Sprintf("unsynced write %d shorn after %d bytes", k+1, cut-wlo))
			}
		}
	}
	return out
}

// latest returns sector i as the unsynced writes left it.
func (f *fileModel) latest(i int) sectorVersion {
	lo, hi := i*sectorSize, min((i+1)*sectorSize, len(f.now))
	return sectorVersion{f.now[lo:hi], "as last written"}
}

// crashReport is what check found.
type crashReport struct {
	points, states, refused int
	violation               error // the first state read as a mark below the bound, or nil
}

// check reads every state a power loss could leave at every point of the
// events, as the next holder would, and stops at the first that reads a
// mark below what the holders may have issued at by then.
func check(events []event, path string) crashReport {
	var r crashReport
	d := newDiskModel()
	var bound time.Time
	after := "before the first event"
	for i := 0; i <= len(events); i++ {
		if i > 0 {
			e := events[i-1]
			d.apply(e)
			if e.kind == evBound {
				bound = e.at
			}
			after = fmt.Sprintf("after event %d (%v)", i, e)
		}
		r.points++
		d.states(path, func(content []byte, how string) bool {
			r.states++
			mark, err := recoverMark(content)
			switch {
			case errors.Is(err, ErrCorrupt):
				r.refused++
				return true
			case err != nil:
				r.violation = fmt.Errorf("a power loss %s can leave %s (%s), which reads as an error that is not ErrCorrupt: %w", after, filepath.Base(path), how, err)
			case mark.Before(bound):
				got := "no mark"
				if !mark.IsZero() {
					got = fmt.Sprintf("the mark %s, %v too low", hms(mark), bound.Sub(mark))
				}
				r.violation = fmt.Errorf("a power loss %s can leave %s (%s) with %s, while the holders may have issued up to %s: the next holder could repeat their IDs",
					after, filepath.Base(path), how, got, hms(bound))
			default:
				return true
			}
			return false
		})
		if r.violation != nil {
			return r
		}
	}
	return r
}

func hms(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// recoverMark reads the mark in content as Take does with the file it
// locked: nil content is a file made anew.
func recoverMark(content []byte) (time.Time, error) {
	st, err := readState(memFile{bytes.NewReader(content)}, 0)
	return st.last.until, err
}

// memFile is a file's content, for readState.
type memFile struct{ *bytes.Reader }

func (memFile) WriteAt([]byte, int64) (int, error) { return 0, errors.ErrUnsupported }
func (memFile) Sync() error                        { return nil }
func (memFile) Stat() (fs.FileInfo, error)         { return nil, errors.ErrUnsupported }
func (memFile) Fd() uintptr                        { return ^uintptr(0) }
func (memFile) Name() string                       { return "machine-0" }
func (memFile) Close() error                       { return nil }
