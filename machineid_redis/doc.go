// Package machineid_redis leases ringflake machine IDs from Redis: a
// standalone server, Sentinel or Cluster, version 5 or later.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	ids, err := machineid_redis.New(client, machineid.WithRange(0, 1023))
//	...
//	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(ids))
//	...
//	defer g.Close() // releases the lease
//
// Each process takes the lowest free ID in the range and holds it with a
// random owner token on a key with a TTL; Lua scripts take, renew and free
// it, and keep a mark per ID, the latest time any holder may issue with,
// which the next holder waits out. [WithHostMapping] keeps the keys of an
// existing host-to-ID mapping instead. Every key lives under one prefix
// with a hash tag, so each script runs on one Cluster slot.
//
// Guarantee: while Redis keeps its keys (no FLUSHALL, no eviction, no
// failover to a replica that lagged), no two holders issue the same ID,
// whatever their clocks say. Every script reads Redis's clock (TIME), which
// a holder's is checked against when it takes an ID
// (machineid.WithMaxClockOffset), and no mark is set more than the TTL and
// that bound past it. A restart may forget the marks or roll them back to
// a snapshot, for good: every take then reads each mark as at least the
// restart floor, the server's start on its clock plus TTL + twice the bound, for
// as long as the server runs, and a lease another server process recorded
// (one a snapshot brought back) is void.
//
// The options common to every store are in package machineid. What a user
// sees on a first lease, a loss, a restart or a failover, and what the
// clocks must agree on, is in docs/machineid_redis.md.
package machineid_redis
