package ringflake

import "strconv"

// ID is a ringflake identifier: a positive 63-bit integer laid out as
// described by a [Layout]. IDs from one generator sort by the time they were
// issued, as long as its clock does not step back. ID is a plain value;
// decode it with the Layout it was made with ([Generator.Layout] or
// [DefaultLayout]).
type ID int64

// Int64 returns id as an int64.
func (id ID) Int64() int64 { return int64(id) }

// String returns id in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }
