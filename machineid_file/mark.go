package machineid_file

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// The mark of a machine ID lives in its file in two slots, each a record
// of one line, written in turn; the one with the higher sequence number is
// the mark. A renewal writes the slot that does not hold the mark, then
// fsyncs, so a crash in the middle of it tears only a record whose mark
// was never granted, and the other slot still holds the last one that was.
// That costs one fsync per renewal, where a new file renamed over the old
// would cost two (the file and its directory) and a block on every write.
//
// The slots are a page apart, so that writing one never rewrites the page
// that holds the other: a torn page write cannot take both. The first
// write allocates both, so renewals overwrite blocks the file already has
// and a full disk cannot fail them on a filesystem that writes in place
// (ext4, XFS, tmpfs); on a copy-on-write one (Btrfs, ZFS) it can, and the
// lease is then lost with ENOSPC as its cause.
const (
	slotSize  = 256  // one record, padded with spaces, ending in '\n'
	slotOff1  = 4096 // the second slot's offset; the first is at 0
	fileSize  = slotOff1 + slotSize
	magic     = "ringflake-mark"
	version   = "v1"
	maxHost   = 64 // host names are cut to this many bytes
	crcPrefix = " crc="
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is one slot's content.
type record struct {
	id    int64
	seq   uint64    // higher is newer; 0 for an empty slot
	until time.Time // the mark: no ID of the machine ID has a later time
	pid   int       // the process that wrote it, for a refused twin's message
	host  string
}

// encode returns r as a slot: a line of text a person can read with cat,
// with a CRC-32C of the rest, padded to slotSize.
func (r record) encode() []byte {
	host := r.host
	if len(host) > maxHost {
		host = host[:maxHost]
	}
	host = strings.Map(func(c rune) rune {
		if c <= ' ' || c > '~' {
			return '_'
		}
		return c
	}, host)
	if host == "" {
		host = "-"
	}
	body := fmt.Sprintf("%s %s id=%d seq=%d until=%d (%s) pid=%d host=%s",
		magic, version, r.id, r.seq, r.until.UnixNano(), r.until.UTC().Format(time.RFC3339Nano), r.pid, host)
	line := fmt.Sprintf("%s%s%08x", body, crcPrefix, crc32.Checksum([]byte(body), castagnoli))
	b := bytes.Repeat([]byte{' '}, slotSize)
	copy(b, line)
	b[slotSize-1] = '\n'
	return b
}

// slotKind is what a slot holds.
type slotKind uint8

const (
	blank   slotKind = iota // nothing: past the end of the file, or zeros
	valid                   // a record of ours, intact
	torn                    // ours (it starts with the magic, or is a piece of it) but not intact
	garbage                 // something nobody of ours wrote
)

// decode reads a slot of the file of machine ID id.
func decode(b []byte, id int64) (record, slotKind) {
	if len(bytes.Trim(b, "\x00")) == 0 {
		return record{}, blank
	}
	if !bytes.HasPrefix(b, []byte(magic)) {
		// A write torn within the magic, with nothing past it: a small
		// file's size persisted ahead of its data, or a sector shorn.
		if rest := bytes.TrimRight(b, "\x00"); strings.HasPrefix(magic, string(rest)) {
			return record{}, torn
		}
		return record{}, garbage
	}
	line := string(bytes.TrimRight(b, " \n"))
	body, sum, ok := strings.Cut(line, crcPrefix)
	if !ok || len(b) != slotSize || sum != fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli)) {
		return record{}, torn
	}
	r, ok := parseBody(body)
	if !ok || r.id != id || r.seq == 0 {
		return record{}, torn
	}
	return r, valid
}

// parseBody parses an intact record's fields.
func parseBody(body string) (r record, ok bool) {
	f := strings.Fields(body)
	if len(f) != 8 || f[0] != magic || f[1] != version {
		return r, false
	}
	vals := make([]string, 0, 5)
	for i, key := range []string{"id=", "seq=", "until=", "(", "pid="} { // "(" is the mark for people
		v, found := strings.CutPrefix(f[2+i], key)
		if !found {
			return r, false
		}
		vals = append(vals, v)
	}
	host, found := strings.CutPrefix(f[7], "host=")
	id, err1 := strconv.ParseInt(vals[0], 10, 64)
	seq, err2 := strconv.ParseUint(vals[1], 10, 64)
	until, err3 := strconv.ParseInt(vals[2], 10, 64)
	pid, err4 := strconv.Atoi(vals[4])
	if !found || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return r, false
	}
	return record{id: id, seq: seq, until: time.Unix(0, until), pid: pid, host: host}, true
}

// state is what a file holds: its newest intact record, and which slot
// that is in (-1 if none).
type state struct {
	last record
	slot int
}

// next returns the record to write after st, with mark until, and the
// offset of the slot it goes in: the one not holding st's.
func (st state) next(until time.Time, pid int, host string) (record, int64) {
	r := record{id: st.last.id, seq: st.last.seq + 1, until: until, pid: pid, host: host}
	if st.slot == 0 {
		return r, slotOff1
	}
	return r, 0
}

// parseFile reads the content of machine ID id's file, of any length. It
// returns the state, or why the file cannot be trusted:
//   - a slot holding something that is not ours: garbage;
//   - no intact slot but a torn second one: both copies of the mark are
//     damaged, since the second slot is only written once the first has
//     been, intact.
//
// No intact slot, with the second one blank, means the first write never
// finished: nothing was granted on it, so there is no mark to keep.
func parseFile(b []byte, id int64) (state, error) {
	get := func(off int) []byte {
		if off >= len(b) {
			return nil
		}
		return b[off:min(off+slotSize, len(b))]
	}
	r0, k0 := decode(get(0), id)
	r1, k1 := decode(get(slotOff1), id)
	switch {
	case k0 == garbage || k1 == garbage || len(b) > fileSize ||
		(len(b) > slotSize && len(bytes.Trim(b[slotSize:min(slotOff1, len(b))], "\x00")) > 0):
		return state{}, fmt.Errorf("%w: it is not a ringflake mark file of machine ID %d", ErrCorrupt, id)
	case k0 == valid && (k1 != valid || r0.seq > r1.seq):
		return state{last: r0, slot: 0}, nil
	case k1 == valid:
		return state{last: r1, slot: 1}, nil
	case k1 == torn:
		return state{}, fmt.Errorf("%w: both copies of machine ID %d's mark are damaged, so how far its IDs went is unknown", ErrCorrupt, id)
	}
	return state{last: record{id: id}, slot: -1}, nil
}
