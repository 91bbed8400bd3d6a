// Package machineid supplies ringflake generators with machine IDs.
//
// A [Source] returns one ID. A [Leaser] holds its ID on a lease that can be
// lost and regained, and that bounds the times its holder may issue
// ([Lease].After and [Lease].Until). Give either to
// ringflake.WithMachineIDSource.
//
// The sources here are plain, each checked against a maximum (the layout's
// MaxMachine) so that an out-of-range ID fails with [ErrNotFound], naming
// the value and the valid range:
//
//   - [Env]: a decimal environment variable;
//   - [StatefulSetOrdinal]: the "-N" suffix of a Kubernetes StatefulSet pod;
//   - [PrivateIP]: the low bits of the first private IPv4 address;
//   - [FromFunc]: any function.
//
// Env and StatefulSetOrdinal can be made unique by configuration; PrivateIP
// can collide, as its doc explains. Fleets whose processes come and go
// should lease IDs instead: packages machineid_redis, machineid_etcd and
// machineid_postgres hold them on the stores teams already run.
package machineid
