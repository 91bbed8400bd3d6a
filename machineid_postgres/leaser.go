package machineid_postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ringflake/ringflake/machineid"
)

// DB runs the Leaser's statements. A *pgxpool.Pool satisfies it and is the
// one to pass: it reconnects after the server restarts or fails over, and
// lets the Leaser's renewals run beside the application's queries. A
// *pgx.Conn satisfies it too, but dies with its connection, and must not be
// used by anyone else meanwhile. Each statement must run in a transaction of
// its own, committed when it returns: not a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Leaser hands out a machine ID held on a lease in a PostgreSQL table. It
// implements [machineid.Leaser]: give it to ringflake.WithMachineIDSource,
// and the generator follows the lease and releases it on Close. One Leaser
// serves one generator at a time.
//
// After the first successful MachineID, a background goroutine renews the
// lease every TTL/3 and, once it is lost, takes one again (perhaps another
// ID) until Release. All methods are safe for concurrent use.
type Leaser struct {
	db  DB         // written once by New
	cfg config     // written once by New
	sql statements // written once by New

	// turn serializes the statements that change this Leaser's rows (take,
	// renew, free), so that its token never has two in flight and the
	// release comes after the last of them. It is a channel, not a mutex,
	// so that MachineID can stop waiting for it when its context ends.
	turn chan struct{}

	mu       sync.Mutex      // protects the fields below
	lease    machineid.Lease // what watchers see
	owned    bool            // the database last said the session's token owns lease.ID
	deadline time.Time       // with a monotonic reading: Held ends here
	lastErr  error           // the last failed statement's error, for ErrExpired
	sess     *session        // the current session, nil when none
	last     *session        // the last session released, for a second Release
	expiry   *time.Timer     // fires at deadline; written once by New

	wmu      sync.Mutex // serializes deliveries to watchers; protects watchers and nextW
	watchers map[int]func(machineid.Lease)
	nextW    int
}

// session is one stretch of holding, from the first MachineID after New or
// after a Release, to the next Release. Each has its own owner token, so a
// lease held before a Release is never mistaken for the next session's own.
type session struct {
	token   string
	ctx     context.Context    // done when Release begins; ends statements in flight
	cancel  context.CancelFunc // cancels ctx
	running bool               // the renewer started; guarded by Leaser.mu
	stopped chan struct{}      // closed when the renewer returns

	released   chan struct{} // closed when Release has finished
	releaseErr error         // written before released is closed
}

var _ machineid.Leaser = (*Leaser)(nil)

// New returns a Leaser that takes its machine ID from db's table, as the
// options say. It does not contact the database: the first MachineID does.
// It returns an error wrapping ringflake.ErrInvalidConfig, naming the value
// and its valid range, if db is nil or an option is out of range. New is
// safe for concurrent use.
func New(db DB, opts ...Option) (*Leaser, error) {
	c := config{table: defaultTable, lo: 0, hi: defaultMaxID}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if db == nil {
		return nil, invalid("db", "nil", "a *pgxpool.Pool or another DB")
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	l := &Leaser{
		db:       db,
		cfg:      c,
		sql:      newStatements(c.table),
		turn:     make(chan struct{}, 1),
		lease:    machineid.Lease{ID: -1},
		watchers: make(map[int]func(machineid.Lease)),
	}
	l.expiry = time.AfterFunc(time.Hour, l.expire)
	l.expiry.Stop()
	return l, nil
}

// CreateTable creates the Leaser's table if it does not exist, with the
// statement [TableSQL] shows. It is for applications that let the program
// create its tables; others run that statement in their migrations. Many
// processes may call it at once on an empty database: they take turns, and
// each finds the table made. It returns the database's error, wrapped.
func (l *Leaser) CreateTable(ctx context.Context) error {
	if _, err := l.db.Exec(ctx, l.sql.create); err != nil {
		return fmt.Errorf("machineid_postgres: creating table %s: %w", l.cfg.table, err)
	}
	return nil
}

// MachineID returns the leased machine ID. If the Leaser holds no lease it
// takes the lowest free ID in its range, in one statement (two the first
// time an ID is used, which adds its row), and then renews the lease in the
// background until Release. It waits for the statement at most until ctx's
// deadline or, if ctx has none, the call timeout, and returns soon after
// ctx is done. It returns an error wrapping [ErrExhausted] if every ID in
// the range is held, [ErrReleased] if Release cut it short, the context's
// error, or the database's error (a missing table among them). MachineID is
// safe for concurrent use.
func (l *Leaser) MachineID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("machineid_postgres: %w", err)
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return -1, fmt.Errorf("machineid_postgres: waiting for the lease: %w", ctx.Err())
	}
	defer func() { <-l.turn }()
	l.mu.Lock()
	if l.lease.Held && l.sess != nil {
		id := l.lease.ID
		l.mu.Unlock()
		return id, nil
	}
	s := l.sess
	if s == nil {
		s = newSession()
		l.sess = s
	}
	l.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	if _, ok := ctx.Deadline(); !ok {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, l.cfg.callTimeout)
		defer cancelT()
	}
	if err := l.take(ctx, s); err != nil {
		if s.ctx.Err() != nil {
			return -1, ErrReleased
		}
		return -1, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != s {
		return -1, ErrReleased // Release frees what was just taken
	}
	if !s.running {
		s.running = true
		go l.run(s)
	}
	return l.lease.ID, nil
}

func newSession() *session {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	s := &session{token: hex.EncodeToString(b[:]), stopped: make(chan struct{}), released: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Release stops renewing and gives the lease up: its row is free at once,
// and watchers see a lease that is not held, with Err [ErrReleased]. If
// issued is not the zero Time, the ID's mark comes down to issued, or to the
// mark this holder inherited if that is later; the zero Time keeps the
// confirmed mark. Only rows this Leaser still owns change. Release waits for
// a statement in flight to end, then for its own, at most the TTL;
// a Leaser that never tried to take a lease does not contact the database.
// A later MachineID takes a lease again, with a new token.
//
// Release returns the database's error, wrapped; the lease then runs out in
// the database after its TTL, and its mark stays. It is safe for concurrent
// use and to call more than once: a call while no lease is held returns the
// last release's result.
func (l *Leaser) Release(issued time.Time) error {
	l.mu.Lock()
	s := l.sess
	if s == nil {
		last := l.last
		l.mu.Unlock()
		if last == nil {
			return nil
		}
		<-last.released
		return last.releaseErr
	}
	l.sess, l.last = nil, s
	running := s.running
	l.setLocked(machineid.Lease{ID: l.lease.ID, Err: ErrReleased})
	l.owned = false
	l.mu.Unlock()
	l.notify()

	s.cancel()
	if running {
		<-s.stopped
	}
	l.turn <- struct{}{} // the statement in flight, if any, has seen s.ctx end
	defer func() { <-l.turn }()
	defer close(s.released)
	var mark any // NULL keeps the mark
	if !issued.IsZero() {
		mark = ceilMicro(issued)
	}
	// Up to a TTL, not the call timeout: no lease is at stake any more, and
	// past a TTL the row has expired anyway; a busy database may still
	// answer in time to lower the mark.
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ttl)
	defer cancel()
	// The statement frees the row only for this token, so running it again
	// is harmless; a second try gets past a pooled connection that a
	// server restart closed, which fails only the first statement sent on it.
	var err error
	for range 3 {
		if _, err = l.db.Exec(ctx, l.sql.free, s.token, mark); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		s.releaseErr = fmt.Errorf("machineid_postgres: releasing machine ID %d in %s: %w", l.Lease().ID, l.cfg.table, err)
	}
	return s.releaseErr
}

// Lease returns the current lease, as watchers were last told or are about
// to be. Its ID is -1 before the first lease. Lease is safe for concurrent
// use.
func (l *Leaser) Lease() machineid.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease
}
