// Package machineidtest checks that a machine-ID store keeps the contract
// that ringflake generators rely on, in the manner of testing/fstest.TestFS.
// Anyone who writes a [machineid.Leaser], our own backends included, runs
// the whole suite against a real store with one call to [Run].
package machineidtest

import (
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// Harness describes a store under test to [Run].
type Harness struct {
	// NewLeaser returns a new Leaser with a client of its own to the store,
	// handing out machine IDs lo..hi on leases of the given TTL, or an
	// error wrapping ringflake.ErrInvalidConfig for a configuration it
	// refuses. It must not contact the store before the Leaser's first
	// MachineID. Run releases or abandons every Leaser it gets.
	NewLeaser func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error)

	// Abandon makes l stop as a crashed process would: its client stops
	// talking to the store, and nothing is released, so its lease is left
	// to expire in the store.
	Abandon func(l machineid.Leaser)

	// Restart stops the store and starts it again on the same address,
	// returning once it answers.
	Restart func(t *testing.T)

	// KeepsData reports whether the store keeps leases and marks across
	// Restart. A store that loses them must make the next holder of an ID
	// wait out a floor that covers every mark it had given.
	KeepsData bool

	// TTL is the lease TTL the suite uses: the shortest the store handles
	// well, such as 1 or 2 seconds, so the expiry checks stay short.
	TTL time.Duration
}

// Run checks the contract of the store h describes, in subtests:
//   - exclusive holding under contention, many holders each with its own
//     client, and real expiry;
//   - expiry and reuse after the TTL;
//   - release, and the mark lowered to what was issued and no lower;
//   - marks that only grow, and that a generator never passes;
//   - a new holder starting above the previous holder's confirmed mark;
//   - loss reported, with its cause, before anyone else can hold the ID;
//   - the context honoured, and bad configuration refused;
//   - a store restart, with or without its data, issuing nothing twice.
func Run(t *testing.T, h Harness) {
	t.Helper()
	panic("machineidtest: Run is being written")
}
