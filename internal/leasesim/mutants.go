package leasesim

import "github.com/ringflake/ringflake/internal/mutant"

// Mutant is a deliberately broken variant of the engine that the
// simulation must catch.
type Mutant struct {
	Name   string
	Engine bool   // in the engine, switched on through package mutant; else in the simulated store
	Breaks string // what it breaks, and what catches it
}

// Mutants are the mutants, each of which the simulation catches within
// 2,000 seeds.
var Mutants = []Mutant{
	{mutant.NoFloor, true, "ringflake: the mark a lease inherited is ignored: New does not wait for it, nor do calls refuse ticks at or below it. A handover after a release or a clock behind repeats the previous holder's ticks (overlap, floor)."},
	{mutant.MarkBeforeStore, true, "machineid: a renewal reports its proposed mark before the store records it, so a clock stepped forward issues past a mark the store may never record (past-mark)."},
	{mutant.WallExpiry, true, "machineid: the lease's deadline is judged on the wall clock (the mark minus the margin) rather than the monotonic one: a clock stepped back keeps a lease held past its expiry in the store (exclusive)."},
	{mutant.NoMargin, true, "machineid: the lease is vouched for until the send time plus the whole TTL, without the safety margin: a store whose clock runs faster than the holder's (within what the margin covers) lets it go while it is still held (exclusive)."},
	{mutant.AnswerDeadline, true, "machineid: a lease's life is counted from the store's answer, not from the call's sending: a slow answer keeps it held past its expiry in the store (exclusive)."},
	{mutant.ReleaseBeforeStop, true, "ringflake: Close frees the lease before it stops the generator. The Holder tells the generator of the release before it frees the ID, so no ID repeats; calls still running see their lease released rather than the generator closed (released-live)."},
	{mutant.RingForgets, true, "ringflake: after a step back longer than the ring, a slot of a later tick is started afresh instead of continued, so the later tick's IDs come round again (unique)."},
	{mutant.NoRetake, true, "machineid: once the store says the lease was lost, the Holder never takes one again until its next Release: the generator stops issuing for good, which no safety invariant sees; the liveness check does, once faults heal (liveness)."},
	{mutant.NoRecheck, true, "ringflake: a claim keeps the IDs of its CAS without checking that the state it claimed under still stands: a Close that came between the state's load and the CAS has already scanned what was issued and released the lease with a lower mark, so the ID is past the mark its release left (released-mark). With one P and no preemption nothing comes between them but the yields each seed's schedule draws."},
	{mutant.RidePastMark, true, "machineid: a holding rides out a Redis restart up to the store's clock at its last confirmation plus the restart floor's offset, as before issue 36, past the mark the store confirmed for it, which a newcomer that took the ID while the store ran (its lease ended early by the store's clock) inherited (past-mark, overlap)."},
	{mutant.RideUnconfirmed, true, "machineid: after a Redis restart, a Holder that takes its old machine ID again keeps the mark its old holding inherited, not the restart floor the take gave, whether or not its lease was confirmed across the restart: a holder cut off past its deadline, whose ID a newcomer took on the old instance, then issues the newcomer's ticks (overlap, floor, unique)."},
	{uncappedName, false, "the simulated Redis caps no mark at TTL + bound past its time, as machineid_redis does for its restart floor: a holder whose clock drifted past the bound once it held sets marks the floor does not cover, and after a restart that forgets them a newcomer issues its ticks (overlap, unique). Only clocks past the bound, which the swarmed worlds draw, can show it."},
	{shortFloorName, false, "the simulated Redis's restart floor lasts TTL + bound after a restart, as machineid_redis's did until the simulation's clocks at the bound's edges found it: a newcomer a bound behind the server then issues below the lost mark of a holder a bound ahead, cut off across the restart (unique, overlap)."},
	{windowFloorName, false, "the simulated Redis's restart floor lasts TTL + 2·bound after a restart and is 0 after, as machineid_redis's did until the swarmed worlds (issue 28): a newcomer that takes after the window, with no mark to inherit, and then steps its clock back issues the ticks of a holder whose marks the restart lost (overlap, unique)."},
	{fleetNoTermName, false, "the simulated etcd ages a holder's clock record by its lease's TTL left and keeps records of an earlier raft term, as machineid_etcd did before D4 (issue 28): a leader change keeps every lease alive anew, so for up to a renewal period after it every record looks as young as the change, the fleet's clock reads behind, and a newcomer within the bound is refused as ahead (refused)."},
	{fleetOneDecidesName, false, "the simulated etcd's fleet clock is never tentative, as machineid_etcd's was before issue 36: with one or two records read, or records that do not agree, one holder whose clock is off decides who is refused, and a newcomer within the bound of the true time is refused against it (refused)."},
	{noRestartErrorName, false, "the simulated Redis answers a renewal of an ID it forgot in a restart with a plain ErrLeaseLost, not a *RestartError: no Holder rides, and one whose lease was confirmed across the restart issues nothing until its clock passes the restart floor, TTL + slack past the restart, which no safety invariant sees (ride-live)."},
	{renewAcrossRestartName, false, "the simulated Redis renews a token's lease that another run of the server recorded, as machineid_redis did before issue 36: a holder cut off while Redis restarted empty and a newcomer took its ID, then restored an older snapshot that holds the holder's lease, renews it and issues with its old After, while the newcomer rides out the restore (overlap, unique)."},
	{ownLeaseNoFloorName, false, "the simulated Redis's take that finds the token's own lease, recorded by another run of the server (a snapshot restored), keeps the After recorded with it, without the restart floor, as machineid_redis's did before issue 36: a holder that rode out an empty restart and took another ID takes its old one back below the floor, into the ticks of the newcomer that held it meanwhile (overlap, unique)."},
	{replicaUptimeName, false, "the simulated Redis reads a promoted replica's start from its uptime too, as machineid_redis's scripts did before issue 36's second review: a replica that resynced its restarted primary's empty data and was switched to (R4) gives a floor counted from its own process's start, long past, and a newcomer issues the ticks of a holder whose marks the restart lost (overlap, unique)."},
	{storeMutantName, false, "the simulated store's Renew does not check the token, as every real store's renewal does (Redis's script, etcd's and PostgreSQL's compares, Kubernetes' holder): it shows that the checks catch a store that breaks the contract machineid.Store states, which the engine trusts (overlap, unique)."},
}

// lookup returns the mutant name, and whether there is one.
func lookup(name string) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}
