// Package machineid supplies ringflake generators with machine IDs.
//
// A [Service] returns one ID; a [Leaser] holds its ID on a lease that can
// be lost and regained and that bounds the time its holder may issue in
// ([Lease].After and [Lease].Until). Give either to
// ringflake.WithMachineIDService.
//
// The providers here are plain Services, each checked against a maximum
// (the layout's MaxMachine) so an out-of-range ID fails with
// [ErrOutOfRange], naming the value and the valid range:
//
//   - [Static]: a fixed ID;
//   - [Env]: a decimal environment variable;
//   - [StatefulSetOrdinal]: the "-N" suffix of a Kubernetes StatefulSet pod;
//   - [PrivateIP]: the low bits of the first private IPv4 address;
//   - [HostHash]: a hash of /etc/machine-id, or of the hostname;
//   - [FromFunc]: any function.
//
// Only Static, Env and StatefulSetOrdinal can be made unique by
// configuration; PrivateIP and HostHash can collide, as their docs explain.
// Fleets whose processes come and go should lease IDs instead: package
// machineid_redis.
package machineid
