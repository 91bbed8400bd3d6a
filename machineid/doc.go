// Package machineid supplies ringflake generators with machine IDs.
//
// A [Source] returns one ID: [Env], [StatefulSetOrdinal], [PrivateIP] or
// [FromFunc], each checked against a maximum (the layout's MaxMachine), so
// that an ID out of range fails with [ErrNotFound]. A [Leaser] holds its ID
// on a lease that can be lost and regained, and that bounds the times its
// holder may issue ([Lease].After and [Lease].Until). Give either to
// ringflake.WithMachineIDSource.
//
// A [Holder] is the Leaser of every lease store: packages machineid_file (a
// file on the local disk), machineid_redis, machineid_etcd,
// machineid_postgres and machineid_k8s each implement a [Store] and return
// a Holder, configured by the [Option]s here and their own. The common
// behaviour (renewals, expiry, the outage a lease rides out, the bounds on
// every wait) is in docs/leases.md; package machineidtest checks a store.
package machineid
