// Package machineid_etcd leases ringflake machine IDs from etcd, so that
// processes that come and go each hold a distinct ID.
//
// [New] returns a [machineid.Holder] that takes the lowest free ID in its
// range, holds it with an owner key on an etcd lease of its own, and keeps
// per ID a mark, without a lease: the latest time any holder of the ID may
// have issued. Every write compares before it writes, in one transaction.
// Give the Holder to a generator, which follows the lease and releases it
// on Close:
//
//	client, _ := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
//	holder, err := machineid_etcd.New(client, machineid.WithRange(0, 1023))
//	if err != nil { ... }
//	gen, err := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
//	defer gen.Close()
//
// The guarantee: while etcd keeps its data (across restarts and leader
// failovers; not across a restore from an older backup), two generators on
// these leases never issue the same ID, whatever their clocks say. A clock
// that is wrong costs waiting, never a repeated ID; only the clocks' rates
// matter, within the safety margin.
//
// docs/machineid_etcd.md, in the repository, says what a user sees on the
// first lease, on a loss, an etcd restart and a failover, and what the
// clocks must agree on.
package machineid_etcd
