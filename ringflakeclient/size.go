package ringflakeclient

import (
	"math"
	"time"
)

// sizer learns the rate at which a client's IDs are taken, and sizes the
// buffer to it: its target is the IDs taken in half the maximum age,
// between the low and the high water mark. At a steady rate the fill
// then asks for about half the target whenever the buffer, with what is
// asked, falls below the other half, and each ID is handed out within
// about half the maximum age of its fetch: none ages out. A caller that
// slows down leaves at most one target to age out before the rate it
// shows brings the target down.
type sizer struct {
	at     time.Time // when the rate was last learned
	served uint64    // Stats.Served then
	rate   float64   // IDs a second
	target int
}

// learn updates the rate from the IDs served since it was last learned,
// if that is long enough ago to tell (a sixteenth of the maximum age),
// and the target from the rate. A rate that rises is taken at once, so
// that a caller that speeds up waits little; one that falls is followed
// within a quarter of the maximum age, as the old rate's weight fades,
// so that IDs a caller no longer takes are soon no longer fetched.
func (z *sizer) learn(now time.Time, served uint64, o *options) {
	dt := now.Sub(z.at)
	if dt < o.maxAge/16 {
		return
	}
	r := float64(served-z.served) / dt.Seconds()
	keep := math.Exp(-4 * dt.Seconds() / o.maxAge.Seconds())
	z.rate = max(r, keep*z.rate+(1-keep)*r)
	z.at, z.served = now, served
	t := math.Ceil(z.rate * o.maxAge.Seconds() / 2)
	z.target = int(min(max(t, float64(o.low)), float64(o.high)))
}

// refill is the refill point: below it, with what is asked, the fill
// asks for more.
func (z *sizer) refill() int { return (z.target + 1) / 2 }
