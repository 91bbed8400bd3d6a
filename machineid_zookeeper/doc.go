// Package machineid_zookeeper leases ringflake machine IDs from a
// ZooKeeper ensemble, as Twitter's Snowflake and Meituan's Leaf take their
// worker IDs, so that processes that come and go each hold a distinct ID.
//
// [New] returns a [machineid.Holder] that opens a ZooKeeper session of its
// own, whose timeout is the lease's TTL, and holds the lowest free ID of its
// range with an ephemeral node on that session; per ID it keeps a mark in a
// persistent node: the latest time any holder of the ID may have issued.
// Every write is conditional on the nodes' versions. Give the Holder to a
// generator, which follows the lease and releases it on Close:
//
//	holder, err := machineid_zookeeper.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, machineid.WithRange(0, 1023))
//	if err != nil { ... }
//	gen, err := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
//	defer gen.Close()
//
// The guarantee: while ZooKeeper keeps its data (across restarts and leader
// elections; not across a restore from an older snapshot), two generators
// on these leases never issue the same ID, whatever their clocks say, and
// whatever the client library does when it reconnects.
//
// docs/machineid_zookeeper.md, in the repository, says how a session's
// expiry maps onto the lease's deadline, what a user sees on a partition, a
// restart and a failover, and what the clocks must agree on.
package machineid_zookeeper
