//go:build !linux

package machineid_file

// localFS accepts every filesystem: only on Linux does the store tell a
// network filesystem, by statfs's type. Elsewhere, keep the state
// directory on a local disk, as the package doc says.
func localFS(string) error { return nil }
