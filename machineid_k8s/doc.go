// Package machineid_k8s leases ringflake machine IDs from Kubernetes Lease
// objects (coordination.k8s.io/v1), so that the pods of a Deployment each
// hold a distinct ID without a store of their own.
//
// [New] returns a [machineid.Holder] that takes the lowest free ID in its
// range, holds it with the Lease prefix+ID in one namespace, and keeps on
// that Lease the ID's mark: the latest time any holder of the ID may have
// issued. Every write is an update conditioned on the resourceVersion it
// read. Give the Holder to a generator, which follows the lease and
// releases it on Close:
//
//	cfg, _ := rest.InClusterConfig()
//	clientset, _ := kubernetes.NewForConfig(cfg)
//	holder, err := machineid_k8s.New(clientset.CoordinationV1(), machineid.WithRange(0, 1023))
//	if err != nil { ... }
//	gen, err := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
//	defer gen.Close()
//
// The guarantee: while the cluster's etcd keeps its data (across API server
// restarts and etcd leader failovers), two generators on these leases never
// issue the same ID, whatever their clocks say. Expiry is judged as
// client-go's leader election judges it: a contender takes an ID over only
// once it has seen the Lease unchanged for the Lease's duration plus its
// safety margin on its own monotonic clock, so only the clocks' rates
// matter. A clock that is wrong costs waiting, never a repeated ID.
//
// docs/machineid_k8s.md, in the repository, says what a user sees on the
// first lease, on a loss, an API server restart, what the RBAC Role must
// allow, and what each error means.
package machineid_k8s
