package main

import (
	"encoding/binary"
	"fmt"
	"time"

	googleuuid "github.com/google/uuid"
)

// UUIDv7 peers. A UUIDv7 is 128 bits: 48 of Unix milliseconds, the version,
// 12 bits of rand_a, the variant and 62 random bits. Both NewV7s here put a
// sub-millisecond fraction in rand_a and, behind one package-wide mutex,
// bump it by one when a call would repeat or go below the last, carrying
// into the milliseconds: so the first 64 bits strictly increase within the
// process (while the clock does not go back), and past 4096 calls a
// millisecond they run ahead of the clock instead of waiting. next returns
// those 64 bits, which the duplicate check and the lead over the clock
// read; the 62 random bits are left out of both.

// uuidV7Note is the note every UUIDv7 peer prints under the tables.
const uuidV7Note = "128-bit UUIDv7 (a 16-byte key against ringflake's 8): 48 bits of ms and a 12-bit sub-ms fraction, " +
	"bumped on collision behind one global mutex, then 62 random bits from crypto/rand; no per-machine ceiling " +
	"and no wait: past 4096 IDs a ms it runs ahead of the clock. The duplicate check covers its first 64 bits"

// uuidV7Peer is a peer over a UUIDv7 generator.
func uuidV7Peer(name, note string, next func() ([16]byte, bool)) *peer {
	return &peer{
		name: name,
		tick: time.Millisecond,
		// The fraction's 4096 steps a millisecond; beyond them the
		// generator borrows the next millisecond rather than wait, so
		// "of ceiling" above 1 means it ran ahead of the clock.
		perTick: 1 << 12,
		mutex:   true,
		note:    note,
		next: func() (int64, bool) {
			u, ok := next()
			return int64(binary.BigEndian.Uint64(u[:8])), ok
		},
		timeOf: func(hi int64) time.Time { return time.UnixMilli(hi >> 16) },
	}
}

func newGoogleUUID() (*peer, error) {
	if _, err := googleuuid.NewV7(); err != nil {
		return nil, fmt.Errorf("google/uuid: %w", err)
	}
	return uuidV7Peer("google/uuid NewV7", uuidV7Note+"; its fraction counts 256 ns steps, and it allocates once a call", func() ([16]byte, bool) {
		u, err := googleuuid.NewV7()
		return u, err == nil
	}), nil
}
