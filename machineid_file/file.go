package machineid_file

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/sentinel"
	"github.com/ringflake/ringflake/machineid"
)

// ErrCorrupt means a machine ID's file holds something other than an
// intact mark of ours: a file nobody of ours wrote, or both copies of the
// mark damaged. The error names the file and says what to do. Test for it
// with [errors.Is].
var ErrCorrupt = sentinel.New("machineid_file: not an intact mark file")

// limits are the bounds of the file store: the Holder's own, with ranges
// of at most 65536 IDs, each a file, and a default TTL of its own.
var limits = machineid.Limits{Name: "machineid_file", MaxIDs: 1 << 16, DefaultTTL: defaultTTL, Lasts: true}

// defaultTTL is how far ahead of the clock the mark is written by default.
// The lock, not a TTL, keeps a twin out, so the step can be short: a
// restart after a crash waits out at most this much of the mark, and the
// cost is an fsync at every renewal, every TTL/3 (6 a second). It also
// bounds how long a stalled disk can hold up a renewal before the
// generator reaches the mark last made durable and waits: TTL − TTL/3,
// 333ms at the defaults. The lease does not lapse while the disk does not
// answer (Limits.Lasts).
const defaultTTL = 500 * time.Millisecond

// maxAhead is how far ahead of the clock a mark may be before Take refuses
// it. A mark is written at most a TTL (at most an hour) ahead of the
// writer's clock; one further ahead than a day means a clock set far wrong,
// here or where it was written, and no New waits that out.
const maxAhead = 24 * time.Hour

// settings are the store's own options.
type settings struct {
	src machineid.Source // nil: take the lowest free ID in the range
}

// WithSource makes the store guard the machine ID that src gives, such as
// machineid.Env or machineid.StatefulSetOrdinal, instead of taking the
// lowest free one in the range: the ID must lie in the range (WithRange;
// 0..1023 by default). src is asked at every take, with the call's
// context. A machineid.Leaser, which holds its own lease, is refused.
func WithSource(src machineid.Source) machineid.Option {
	return machineid.StoreOption("machineid_file.WithSource", func(s *settings) { s.src = src })
}

// New returns a Holder of a machine ID guarded by a file in dir: one file
// per machine ID, locked by the process that holds the ID and holding its
// mark. dir "" means the default state directory: $RINGFLAKE_STATE_DIR,
// else $XDG_STATE_HOME/ringflake, else ~/.local/state/ringflake. dir must
// be on a local filesystem, and outlive the processes (in a container: on
// a volume). Give the Holder to ringflake.WithMachineIDSource.
//
// With machineid.WithRange(n, n) it guards the fixed machine ID n; with a
// wider range, it takes the lowest free ID in it; with [WithSource], the
// ID a Source gives. The common options of package machineid apply; the
// TTL (default 500ms, where other stores' is 10s) is how far ahead of the
// clock the mark is written, and renewed, at every TTL/3, each time with
// an fsync: the lease itself lasts as long as the process. A restart after
// a crash waits at most the TTL for the clock to pass the mark. A renewal
// that the disk holds up (an fsync that hangs) never makes the lease lapse:
// the generator issues up to the mark last made durable, and if the
// renewal takes longer than TTL − TTL/3 (333ms at the defaults), waits
// there until it is done.
//
// New does not touch dir: the Holder's first MachineID does, creating it
// if need be. New returns an error wrapping ringflake.ErrInvalidConfig for
// an option out of range, a Source that is a Leaser, or no dir and no home
// directory to put the default one in.
func New(dir string, opts ...machineid.Option) (*machineid.Holder, error) {
	var set settings
	s := &store{disk: osFS{}, sem: make(chan struct{}, 1)}
	h, err := machineid.NewHolder(s, &set, limits, opts...)
	if err != nil {
		return nil, err
	}
	if _, ok := set.src.(machineid.Leaser); ok {
		return nil, fmt.Errorf("%w: WithSource(%T): a machineid.Leaser holds its own lease; give it to ringflake.WithMachineIDSource directly", ringflake.ErrInvalidConfig, set.src)
	}
	if dir, err = stateDir(dir); err != nil {
		return nil, err
	}
	s.dir, s.src = dir, set.src
	s.host, _ = os.Hostname() // only for people reading the file: "-" if unknown
	return h, nil
}

// stateDir returns dir made absolute, so that a later chdir cannot move
// it, or the default state directory if dir is "".
func stateDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("RINGFLAKE_STATE_DIR")
	}
	if dir == "" && os.Getenv("XDG_STATE_HOME") != "" {
		dir = filepath.Join(os.Getenv("XDG_STATE_HOME"), "ringflake")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: no directory given, none in $RINGFLAKE_STATE_DIR or $XDG_STATE_HOME, and no home directory for ~/.local/state/ringflake: %w", ringflake.ErrInvalidConfig, err)
		}
		dir = filepath.Join(home, ".local", "state", "ringflake")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: directory %q: %w", ringflake.ErrInvalidConfig, dir, err)
	}
	return abs, nil
}

// path returns the file of machine ID id.
func (s *store) path(id int64) string {
	return filepath.Join(s.dir, fmt.Sprintf("machine-%d", id))
}
