package machineid_file

import (
	"io"
	"io/fs"
	"os"
)

// fileSystem is how the store changes the disk: it opens (and creates)
// files and makes directories through it, and writes, syncs and locks the
// files it returns. Every store uses osFS, set by New; the field holding it
// is unexported and nothing outside this package sets it. It is a seam for
// this package's tests, which record through it what the store writes and
// syncs, to enumerate what a power loss could leave (crash_test.go).
type fileSystem interface {
	OpenFile(name string, flag int, perm fs.FileMode) (fsFile, error)
	Mkdir(name string, perm fs.FileMode) error
}

// fsFile is what the store does with an open file or directory: a subset of
// *os.File's methods.
type fsFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Stat() (fs.FileInfo, error)
	Fd() uintptr
	Name() string
	Close() error
}

// osFS is the operating system's file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (fsFile, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a nil *os.File in a non-nil fsFile
	}
	return f, nil
}

func (osFS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
