// Package machineidtest checks that a machine-ID store keeps the contract
// that ringflake generators rely on, in the manner of testing/fstest.TestFS.
// Anyone who writes a [machineid.Leaser], our own backends included, runs
// the whole suite against a real store with one call to [Run].
//
// # The contract
//
// A holding is one unbroken hold of a machine ID by one Leaser, as its
// watchers see it: from a [machineid.Lease] that holds the ID until one that
// holds another ID, or the same ID with another After. Held may turn false
// and true again within a holding, when the Leaser proves the same lease
// again. A Leaser promises:
//
//  1. Exclusive holding. No two Leasers hold an ID at the same time: a
//     holder reports Held = false before its lease could expire in the
//     store, and MachineID returns an error when every ID in the range is
//     held. A holder that can reach the store keeps its lease.
//  2. Marks. Within a holding, After stays fixed and Until never decreases.
//     Until is reported only once the store has recorded it, and renewals
//     raise it before the holder's clock reaches it.
//  3. Succession. A holding's After, or the clock when it begins if that
//     is later, is at or past every Until given in an earlier holding of
//     the ID; after Release(issued) with a non-zero issued, at or past
//     issued and that holding's After instead. (A store that lost its
//     marks may grant an ID with no After once the clock has passed every
//     Until it could have given.)
//  4. Release. Once Release returns, watchers see Held = false and the ID
//     can be taken at once. Release may be called again, and on a Leaser
//     that holds nothing; a healthy store returns nil each time.
//  5. Loss. A holding that pauses or ends other than by Release is
//     reported with Held = false and a non-nil Err, its cause.
//  6. Context. MachineID on a Leaser that holds nothing, with a context
//     already done, returns at once an error wrapping ctx.Err(), so that
//     errors.Is(err, context.Canceled) or errors.Is(err,
//     context.DeadlineExceeded) holds; the error may wrap a store's own
//     sentinel too. Release then frees whatever the call took.
//  7. Configuration. Making a Leaser with lo < 0, lo > hi, a negative TTL
//     or one of a thousand hours fails, before contacting the store, with
//     an error wrapping ringflake.ErrInvalidConfig. (A TTL of 0 means the
//     store's default.)
//  8. Restart. A store that keeps its data across a restart keeps these
//     promises across it. One that loses its data cannot tell which IDs
//     were held, nor how far: every holding of an ID that begins after the
//     restart has an After (or begins at a time) at or past every Until
//     given for that ID before it (a restart floor), so that what it
//     issues stays apart from what a holder from before, which has yet to
//     notice its loss, may still issue.
//  9. Waiting. MachineID on a range whose every ID is held tries again
//     until its context's deadline, and takes an ID that frees meanwhile;
//     only then does it fail, with an error wrapping machineid.ErrExhausted
//     that says it waited.
//  10. The fleet's clock. A store with a reference clock refuses, at once
//     and with an error wrapping machineid.ErrClockOffset, a holder whose
//     clock is surely further from it than the bound, and the refused
//     holder leaves no mark behind.
//
// Promises 1 to 3 are those [machineid.Leaser] states; with them, the IDs
// that generators on the leases issue are distinct, across handovers,
// expiries and restarts, which Run checks too, with real generators.
//
// # Running the suite
//
// A store's own tests describe it in a [Harness] and call [Run], which
// uses real clients, real time and real generators: its subtests wait for
// leases to expire, so give the store its shortest good TTL. Run uses
// machine IDs 0 to 19, which must be free when it starts: give each call
// a fresh store, or a key prefix of its own.
package machineidtest

import (
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake/machineid"
)

// Harness describes a store under test to [Run].
type Harness struct {
	// NewLeaser returns a new Leaser with a client of its own to the store,
	// handing out machine IDs lo..hi on leases of the given TTL, or an
	// error wrapping ringflake.ErrInvalidConfig for a configuration it
	// refuses; Run tries some bad ones, which NewLeaser should pass on to
	// the store's own checks. It must not contact the store before the
	// Leaser's first MachineID. Run calls it on a subtest's goroutine with
	// that subtest's t, from several subtests at once; it may call
	// t.Fatal, and register the client's closing with t.Cleanup. Run
	// releases or abandons every Leaser it gets, including those whose
	// MachineID failed or was never called.
	NewLeaser func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error)

	// Abandon makes l stop as a crashed process would: its client stops
	// talking to the store, and nothing is released, so its lease is left
	// to expire in the store. l itself lives on, as after a network cut,
	// and must report the loss, with its cause, when it can no longer
	// prove the lease. Run never uses l again; NewLeaser's cleanup should
	// stop it. Abandon gets the Leaser that NewLeaser returned.
	Abandon func(l machineid.Leaser)

	// Pause makes the store stop answering, as a paused server (SIGSTOP)
	// does, without closing its connections, until resume is called.
	// nil skips the Outage subtest.
	Pause func(t *testing.T) (resume func())

	// Restart stops the store and starts it again on the same address,
	// returning once it answers. Run calls it once, while generators are
	// issuing on leases, after its other subtests have ended. nil skips
	// the Restart subtest.
	Restart func(t *testing.T)

	// KeepsData reports whether the store keeps leases and marks across
	// Restart. A store that loses them must make the next holder of an ID
	// wait out a floor that covers every mark it had given.
	KeepsData bool

	// TTL is the lease TTL the suite uses: the shortest the store handles
	// well, such as 1 or 2 seconds, so the expiry checks stay short. Run
	// takes about seven TTLs, and the time Restart takes.
	TTL time.Duration

	// Reference names the clock the store checks a holder's against, as
	// its Grants report it (machineid.Reading.Source), or a part of every
	// name it gives it, such as "Redis's clock (TIME)" or "live holder":
	// the Clock subtest then checks that a holder whose clock is 30s off is
	// refused at once. NewLeaser must then return a
	// *machineid.Holder, to which ringflake.New hands the generator's
	// clock. "" (a store with no reference, such as the file store) skips
	// the subtest. A store whose reference is the live holders' clocks is
	// checked with one holder in place.
	Reference string
}

// Run checks the contract of the store h describes, in subtests that say
// what they check: Leases/Exclusive, Leases/Expiry, Leases/Release,
// Leases/Marks, Leases/Context, Leases/Config, Leases/Wait and
// Leases/Clock, all at once, each on machine IDs of its own; then Outage
// and Restart, each alone. Together they check
//   - exclusive holding under contention, many holders each with its own
//     client, and leases kept past the TTL by renewal;
//   - expiry and reuse after the TTL: the loss reported, with its cause,
//     before anyone else gets the ID, and the next holder's After at or
//     past every Until the lost holding was given;
//   - release: the ID free at once, the next holder's After at or past
//     what was issued and the released holding's After, and Release safe
//     to repeat;
//   - marks that only grow, renewed ahead of the clock, that a generator
//     never passes;
//   - the context honoured, and bad configuration refused;
//   - MachineID waiting, within its deadline, for an ID of a full range to
//     free, and failing with machineid.ErrExhausted, saying so, only then;
//   - with a reference clock, holders whose clocks are 30s ahead or behind
//     refused at once, without a mark left behind;
//   - an outage of the store, from just before a renewal is due, that
//     the lease rides out;
//   - a store restart, with or without its data: each holder keeps its
//     lease or reports the loss and issues again soon, and one that lost
//     the data makes new holdings wait out a restart floor;
//   - and throughout, that the IDs real generators issue on the leases
//     are distinct, each past its holding's After and not past its Until.
//
// Run fails t at once if h has no NewLeaser or Abandon, or a TTL of 0 or
// less.
func Run(t *testing.T, h Harness) {
	t.Helper()
	switch {
	case h.NewLeaser == nil:
		t.Fatal("machineidtest: Harness.NewLeaser is nil")
	case h.Abandon == nil:
		t.Fatal("machineidtest: Harness.Abandon is nil")
	case h.TTL <= 0:
		t.Fatalf("machineidtest: Harness.TTL = %v; want the store's shortest good TTL, such as 1s", h.TTL)
	}
	t.Run("Leases", func(t *testing.T) {
		// The subtests mostly wait for leases to expire, so they run all
		// at once, whatever -test.parallel allows (t.Parallel would make
		// them wait for a free slot): t.Run may be called from several
		// goroutines.
		var g errgroup.Group
		for _, tt := range leaseTests {
			g.Go(func() error {
				t.Run(tt.name, func(t *testing.T) { tt.run(t, h) })
				return nil
			})
		}
		_ = g.Wait() // the goroutines return nil
	})
	t.Run("Outage", func(t *testing.T) {
		if h.Pause == nil {
			t.Skip("machineidtest: Harness.Pause is nil")
		}
		testOutage(t, h)
	})
	t.Run("Restart", func(t *testing.T) {
		if h.Restart == nil {
			t.Skip("machineidtest: Harness.Restart is nil")
		}
		testRestart(t, h)
	})
}

// leaseTests are the subtests that run at once, each on IDs of its own.
var leaseTests = []struct {
	name string
	run  func(*testing.T, Harness)
}{
	{"Exclusive", testExclusive},
	{"Expiry", testExpiry},
	{"Release", testRelease},
	{"Marks", testMarks},
	{"Context", testContext},
	{"Config", testConfig},
	{"Wait", testWait},
	{"Clock", func(t *testing.T, h Harness) {
		if h.Reference == "" {
			t.Skip("machineidtest: Harness.Reference is empty: the store has no reference clock")
		}
		testClock(t, h)
	}},
}

// The machine IDs of each subtest, so that those running at once never meet.
const (
	exclusiveLo = 0 // to exclusiveLo+exclusiveIDs-1
	expiryID    = 8
	releaseID   = 9
	marksID     = 10
	contextID   = 11
	outageID    = 12
	clockLo     = 13 // held on the true clock while clockID is tried
	clockID     = 14
	waitID      = 15
	restartLo   = 16 // to restartLo+restartIDs-1
)
