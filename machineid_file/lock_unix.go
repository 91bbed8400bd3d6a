//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package machineid_file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile opens the file at path, creating it if need be, and locks it
// for this process without waiting. It returns nil and no error if
// another open file holds the lock: another process, or another store in
// this one.
//
// flock locks belong to the open file, not the process as fcntl's do, so
// two stores in one process exclude each other too, and closing any other
// descriptor of the file does not drop the lock. The file is opened
// close-on-exec (as Go opens every file), so that a child process cannot
// inherit the lock and keep the ID after this one dies.
func (s *store) lockFile(path string) (fsFile, error) {
	f, err := s.disk.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}

// unlock frees the lock on f and closes it. Closing alone would leave the
// ID locked while a child process forked meanwhile, by any goroutine, holds
// a copy of the descriptor, until its exec closes it: a moment that a
// loaded machine stretches to tens of milliseconds. The lock belongs to the
// open file, which the copy shares, and LOCK_UN frees it for every copy.
func unlock(f fsFile) {
	_ = flock(f, syscall.LOCK_UN)
	_ = f.Close()
}

// flock applies or removes a lock on f, again if a signal interrupts it.
func flock(f fsFile, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// prepareDir makes dir if it does not exist, durably, and refuses it if
// it is not a directory or is on a network filesystem.
func (s *store) prepareDir(dir string) error {
	if err := s.mkdirDurable(dir); err != nil {
		return err
	}
	return localFS(dir)
}

// mkdirDurable makes dir and its missing parents, and fsyncs the parent of
// each directory it makes, so that a crash cannot lose the directory with
// the marks in it.
func (s *store) mkdirDurable(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("state directory: %w", err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := s.mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := s.disk.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	return s.syncDir(parent)
}

// syncDir fsyncs the directory dir, which makes the names in it durable.
func (s *store) syncDir(dir string) error {
	if s.mutant == mutantNoDirSync {
		return nil
	}
	d, err := s.disk.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("syncing directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
