package nemesis

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

//go:embed testdata/clockshift.c
var clockshiftC []byte

// shimDir holds the clock shim once built; TestMain removes it.
var shimDir string

// shim builds testdata/clockshift.c once per process, in a directory every
// user can read (postgres runs as its own user), and returns the library's
// path.
var shim = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "nemesis-clockshift")
	if err != nil {
		return "", err
	}
	shimDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	src, lib := filepath.Join(dir, "clockshift.c"), filepath.Join(dir, "clockshift.so")
	if err := os.WriteFile(src, clockshiftC, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command("cc", "-O2", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the clock shim with cc: %v: %s", err, out)
	}
	return lib, nil
})

// A storeClock is a server's wall clock offset, which clockshift.c reads
// from its file at every reading.
type storeClock struct {
	f      *os.File
	offset time.Duration
}

// newStoreClock creates the offset file, at 0, readable by every user.
func newStoreClock(dir string) (*storeClock, error) {
	f, err := os.OpenFile(filepath.Join(dir, "store-clock"), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	c := &storeClock{f: f}
	return c, c.set(0)
}

// env is what a server's environment needs for its clock to follow c.
func (c *storeClock) env() ([]string, error) {
	lib, err := shim()
	if err != nil {
		return nil, err
	}
	return []string{"LD_PRELOAD=" + lib, "NEMESIS_CLOCK_FILE=" + c.f.Name()}, nil
}

// set writes the offset in place: the file never shrinks under a mapping.
func (c *storeClock) set(d time.Duration) error {
	c.offset = d
	_, err := c.f.WriteAt(binary.NativeEndian.AppendUint64(nil, uint64(d)), 0)
	return err
}

// TestClockShiftMovesRedisTime checks the shim on a real redis-server: its
// TIME moves with the offset file at once (the offset read back lies within
// the call's round trip), and a jump expires a key early, as a jump of the
// server's clock does.
func TestClockShiftMovesRedisTime(t *testing.T) {
	w := &world{t: t, dir: t.TempDir()}
	s := startRedis(w).(*redisServer)
	c := redis.NewClient(&redis.Options{Addr: s.upstream()})
	defer c.Close()
	ctx := context.Background()
	offset := func() (lo, hi time.Duration) {
		t0 := time.Now()
		now, err := c.Time(ctx).Result()
		t1 := time.Now()
		require.NoError(t, err)
		return now.Sub(t1) - time.Microsecond, now.Sub(t0) + time.Microsecond
	}
	lo, hi := offset()
	assert.True(t, lo <= 0 && 0 <= hi, "no shift: TIME is %v to %v off the local clock", lo, hi)
	require.NoError(t, c.Set(ctx, "k", "v", 3*time.Second).Err())
	require.NoError(t, s.clock.set(1500*time.Millisecond))
	lo, hi = offset()
	assert.True(t, lo <= 1500*time.Millisecond && 1500*time.Millisecond <= hi, "shifted 1.5s: TIME is %v to %v off the local clock", lo, hi)
	require.NoError(t, s.clock.set(5*time.Second))
	assert.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "a key set to expire in 3 s outlived a 5 s jump of the server's clock")
}

// TestClockShiftMovesMySQLTime checks the shim on a real MariaDB, whose
// UTC_TIMESTAMP judges the leases' expiry: it moves with the offset file,
// as the harness's "MySQL's clock steps" fault needs.
func TestClockShiftMovesMySQLTime(t *testing.T) {
	w := &world{t: t, dir: t.TempDir()}
	s := startMySQL(w).(*mysqlServer)
	db, err := sql.Open("mysql", s.target(s.upstream()))
	require.NoError(t, err)
	defer db.Close()
	offset := func() (lo, hi time.Duration) {
		var us int64
		t0 := time.Now()
		require.NoError(t, db.QueryRow("SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))").Scan(&us))
		t1 := time.Now()
		now := time.UnixMicro(us)
		return now.Sub(t1) - time.Millisecond, now.Sub(t0) + time.Millisecond
	}
	lo, hi := offset()
	assert.True(t, lo <= 0 && 0 <= hi, "no shift: UTC_TIMESTAMP is %v to %v off the local clock", lo, hi)
	require.NoError(t, s.clock.set(time.Hour))
	lo, hi = offset()
	assert.True(t, lo <= time.Hour && time.Hour <= hi, "shifted 1h: UTC_TIMESTAMP is %v to %v off the local clock", lo, hi)
}
