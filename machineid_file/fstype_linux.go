package machineid_file

import (
	"fmt"
	"syscall"

	"github.com/ringflake/ringflake"
)

// networkFS names the filesystems, by statfs's f_type, on which a lock
// does not do what the store needs: on a network filesystem a lock is
// the server's to keep, and may outlive a crashed client or be lost with
// a live one (NFS, SMB, Ceph, 9p); on FUSE, locks and fsync are whatever
// the user-space server makes of them (sshfs, s3fs and gcsfuse keep
// neither). Kernel-local filesystems (ext4, XFS, Btrfs, tmpfs, overlayfs)
// are not listed.
var networkFS = map[uint32]string{
	0x6969:     "nfs",
	0x517B:     "smb",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x01021997: "9p",
	0x00C36400: "ceph",
	0x65735546: "fuse",
	0x5346414F: "afs",
	0x0BD00BD0: "lustre",
}

// localFS refuses dir if it is on a network or FUSE filesystem.
func localFS(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	typ := uint32(st.Type) // int64 or int32 by architecture; the magic is 32 bits
	if name, ok := networkFS[typ]; ok {
		return fmt.Errorf("%w: %s is on a %s filesystem (statfs type 0x%X), where a file lock may outlive a crashed process or be lost by a live one: put the state directory on a local filesystem",
			ringflake.ErrInvalidConfig, dir, name, typ)
	}
	return nil
}
