// Package machineid_file guards machine IDs with files on the local disk:
// a lease store with nothing else to run, for one VM, one container or one
// StatefulSet pod.
//
// A directory holds one file per machine ID. A process holds its ID by an
// exclusive lock on the ID's file, which the kernel drops when the process
// dies, so a second live process on the ID is refused at once, and a
// crashed one's ID is free at once. The file keeps the ID's mark, written
// a TTL (500ms by default) ahead of the clock and fsynced before it is
// used, so that a restart with the clock stepped back waits until the
// clock has passed it, as with every lease, and a restart after a crash
// waits at most the TTL:
//
//	ids, err := machineid_file.New("/var/lib/myapp/ringflake", machineid.WithRange(42, 42))
//	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(ids))
//	defer g.Close() // unlocks the file, and lowers the mark to the last ID issued
//
// machineid.WithRange(lo, hi) takes the lowest free ID in a range, for
// several processes on one host; [WithSource] guards the ID a Source gives
// (machineid.Env, machineid.StatefulSetOrdinal, ...), so that a
// StatefulSet pod whose state directory is on its PersistentVolume is
// restart-safe with no store.
//
// The directory must be on a local filesystem, and outlive the processes
// that use it: in a container, on a volume. On Linux, a network or FUSE
// filesystem is refused; elsewhere nothing tells them apart, so do not put
// it on one: a lock there is the server's to keep. tmpfs keeps the marks
// only until the host restarts.
//
// A file that holds something else, or a mark damaged beyond use, is
// refused ([ErrCorrupt]), as is a mark more than a day ahead of the clock
// (ringflake.ErrMarkAhead); the errors name the file and say what to do.
// A renewal that cannot write the mark (a read-only or full filesystem)
// leaves the lease lost once its deadline passes, with the cause.
package machineid_file
