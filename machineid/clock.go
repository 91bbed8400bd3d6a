package machineid

import (
	"fmt"
	"time"
)

// ClockOffset is a measurement of a holder's clock against its store's
// reference clock, as a [Lease] and a [*ClockOffsetError] report it.
type ClockOffset struct {
	// By is the holder's clock less the reference: positive when the
	// holder's clock is ahead, negative when it is behind.
	By time.Duration
	// Within is the measurement's uncertainty: the true offset lies in
	// By ± Within. It is half the call's round trip plus the reading's
	// own (Reading.Within).
	Within time.Duration
	// Against names the reference, such as "Redis's clock (TIME)"; "" when
	// nothing was measured.
	Against string
	// Bound is the largest offset allowed ([WithMaxClockOffset]), or -1 if
	// the check is off.
	Bound time.Duration
	// Tentative says that the reference may itself be off (see
	// Reading.Tentative): too few of the fleet's clocks agree on it. A
	// take is then not refused, and Past says only that the clock is off
	// this reference; without Tentative, Past says that it has left the
	// fleet's clock.
	Tentative bool
}

// Past reports whether the clock is surely further off than the bound: by
// more than Bound even at the near end of By ± Within. It is false when
// nothing was measured or the check is off.
func (o ClockOffset) Past() bool {
	return o.Against != "" && o.Bound >= 0 && abs(o.By)-o.Within > o.Bound
}

// String describes the offset, to the millisecond, as "1.5s ahead of
// Redis's clock (TIME) (±420µs)", with ", tentative" after the
// uncertainty for a tentative reference; "no measurement" when nothing
// was measured.
func (o ClockOffset) String() string {
	if o.Against == "" {
		return "no measurement"
	}
	way := "ahead of"
	if o.By < 0 {
		way = "behind"
	}
	within := o.Within.Round(time.Millisecond)
	if o.Within < time.Millisecond {
		within = o.Within.Round(10 * time.Microsecond)
	}
	tentative := ""
	if o.Tentative {
		tentative = ", tentative"
	}
	return fmt.Sprintf("%v %s %s (±%v%s)", abs(o.By).Round(time.Millisecond), way, o.Against, within, tentative)
}

// ClockOffsetError is the refusal of a holder whose clock is surely
// further from its store's reference than [WithMaxClockOffset] allows.
// errors.Is(err, ErrClockOffset) holds for it.
type ClockOffsetError struct {
	ClockOffset
	// ID is the machine ID the holder would have taken.
	ID int64
}

// Error says which way the clock is off, by how much, against what, and
// the bound.
func (e *ClockOffsetError) Error() string {
	return fmt.Sprintf("%v: this process's clock is %v; at most %v is allowed (machineid.WithMaxClockOffset), so machine ID %d was not taken: set the clock right (NTP)",
		ErrClockOffset, e.ClockOffset, e.Bound, e.ID)
}

// Unwrap returns [ErrClockOffset].
func (e *ClockOffsetError) Unwrap() error { return ErrClockOffset }

// measure returns the offset of the holder's clock from r, a reading taken
// during a call whose round trip rtt counts from before the holder's clock
// read at, so that the reading falls within rtt of at: it is set against
// the midpoint. A round trip counted from after at would miss the moment
// between them, which a loaded machine can stretch past the uncertainty.
func (h *Holder) measure(r Reading, at time.Time, rtt time.Duration) ClockOffset {
	if r.Time.IsZero() || r.Source == "" {
		return ClockOffset{}
	}
	return ClockOffset{By: at.Add(rtt / 2).Sub(r.Time), Within: rtt/2 + r.Within, Against: r.Source, Bound: h.cfg.maxOffset, Tentative: r.Tentative}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
