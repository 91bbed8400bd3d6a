package machineid_file

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
)

// cutStore is a store whose process can be made to crash, as far as the
// store can tell: once cut, its calls fail, and a TTL later its lock goes,
// as the kernel would drop a dead process's. A test cannot kill its own
// process, and the abandoned Holder lives on, so the lock must outlive the
// Holder's deadline (the last confirmed renewal's send plus TTL − margin),
// as a dead process's Holder would have stopped issuing with the process.
type cutStore struct {
	*store
	cut atomic.Bool
}

var errCut = errors.New("machineid_file test: cut off, as a crashed process")

func (c *cutStore) Take(ctx context.Context, cl machineid.Claim) (machineid.Grant, error) {
	if c.cut.Load() {
		return machineid.Grant{}, errCut
	}
	return c.store.Take(ctx, cl)
}

func (c *cutStore) Renew(ctx context.Context, cl machineid.Claim, id int64) (machineid.Grant, error) {
	if c.cut.Load() {
		return machineid.Grant{}, errCut
	}
	return c.store.Renew(ctx, cl, id)
}

func (c *cutStore) Release(ctx context.Context, cl machineid.Claim, id int64, issued time.Time) error {
	if c.cut.Load() {
		return errCut
	}
	return c.store.Release(ctx, cl, id, issued)
}

// crash cuts c off now and drops its lock after ttl.
func (c *cutStore) crash(ttl time.Duration) {
	c.cut.Store(true)
	time.AfterFunc(ttl, func() {
		_, _ = do(context.Background(), c.store, "crashing", func() (int, error) { c.store.free(); return 0, nil })
	})
}

// newCutHolder returns a Holder on a cutStore in dir.
func newCutHolder(dir string, opts ...machineid.Option) (*machineid.Holder, *cutStore, error) {
	c := &cutStore{store: &store{disk: osFS{}, dir: dir, sem: make(chan struct{}, 1), host: "test"}}
	var set settings
	h, err := machineid.NewHolder(c, &set, limits, opts...)
	return h, c, err
}

// TestConformance runs the conformance suite on a real directory. Its
// Restart turns the directory's mount read-only for a moment, as a volume
// detached and attached again: renewals fail meanwhile, and the marks stay.
func TestConformance(t *testing.T) {
	t.Parallel()
	dir := bindMount(t, t.TempDir())
	var mu sync.Mutex
	stores := map[machineid.Leaser]*cutStore{}
	machineidtest.Run(t, machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			h, c, err := newCutHolder(dir, machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				return nil, err
			}
			mu.Lock()
			stores[h] = c
			mu.Unlock()
			t.Cleanup(func() { _ = h.Release(time.Time{}) })
			return h, nil
		},
		Abandon: func(l machineid.Leaser) {
			mu.Lock()
			defer mu.Unlock()
			stores[l].crash(time.Second)
		},
		Restart: func(t *testing.T) {
			remount(t, dir, "ro")
			if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
				t.Errorf("writing in %s, remounted read-only: %v; want EROFS", dir, err)
			}
			time.Sleep(100 * time.Millisecond)
			remount(t, dir, "rw")
		},
		KeepsData: true,
		TTL:       time.Second,
	})
}

// bindMount mounts dir on itself, so that the test can make it read-only
// on its own, and unmounts it at the end. It needs root (CAP_SYS_ADMIN),
// as CI has; the test fails without it, saying so.
func bindMount(t *testing.T, dir string) string {
	t.Helper()
	mount(t, "--bind", dir, dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// remount makes the bind mount at dir read-only ("ro") or writable ("rw").
// It retries while a file is open for writing there (EBUSY), as a renewal
// has one open for a moment.
func remount(t *testing.T, dir, mode string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("mount", "-o", "remount,bind,"+mode, dir).CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mount -o remount,bind,%s %s: %v: %s", mode, dir, err, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mount runs mount with args, and fails t, saying what it needs, if it
// cannot.
func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v: %s\nthis test needs to mount filesystems (root, or CAP_SYS_ADMIN), as in CI, to make a directory read-only or full: root bypasses file permissions", args, err, out)
	}
}
