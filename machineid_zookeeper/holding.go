package machineid_zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ringflake/ringflake/machineid"
)

// The nodes of machine ID n are prefix+"/owner/n", ephemeral, on the
// holding's session, whose data is the holding's record; and
// prefix+"/mark/n", persistent, whose data is the latest time, in decimal
// nanoseconds since the Unix epoch on the holder's clock, that any holder
// of n may have issued ("0": none).
//
// Every write is conditional, in one transaction: a take creates the owner
// node, which fails if it exists, and writes the mark at the version it
// read (or creates it), so every take moves the mark's version; a renewal
// writes both at the versions its holding last wrote. So a renewal that
// succeeds proves that no one took n since the holding's last write, and a
// holder that lost its node can no longer raise the mark: the next
// holder's After, read when it took n, is at or past every Until an
// earlier holder was given.

func (s *store) ownerPath(id int64) string { return s.prefix + "/owner/" + strconv.FormatInt(id, 10) }

func (s *store) markPath(id int64) string { return s.prefix + "/mark/" + strconv.FormatInt(id, 10) }

func formatMark(ns int64) []byte { return strconv.AppendInt(nil, ns, 10) }

// parseMark reads a mark node's data.
func parseMark(path string, data []byte) (int64, error) {
	ns, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("%s holds %q, not a time in decimal nanoseconds; it was not written by this package", path, data)
	}
	return ns, nil
}

// record is an owner node's data, JSON, so that zkCli shows who holds what.
type record struct {
	Token  string `json:"token"`
	Holder string `json:"holder"`          // host and process, for messages
	After  int64  `json:"after,omitempty"` // the mark the holding inherited, ns
	// Offset is the holder's clock less ZooKeeper's, as its latest take or
	// renewal measured it, within Within; no report while Within is 0.
	Offset int64 `json:"offset_ns,omitempty"`
	Within int64 `json:"within_ns,omitempty"`
}

// holder names this process in the records it writes.
var holder = func() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}()

// holding is what one token holds in ZooKeeper, as far as the store knows.
type holding struct {
	sess *session // the token's session; nil before its first take

	id           int64 // the ID last claimed (maybe unanswered), -1 if none
	session      int64 // the session that owns id's owner node, once granted
	czxid        int64 // the owner node's creation, which names it
	ownerVersion int32 // the owner node's version as last written
	markVersion  int32 // the mark node's version as last written
	mark         int64 // the mark last written, ns
	after        int64 // the mark the holding inherited, ns

	offset, within time.Duration // the latest measurement of the clock's offset; within 0: none
}

// record returns the holding's owner data, with its latest clock report.
func (h *holding) record(c machineid.Claim) []byte {
	b, _ := json.Marshal(record{Token: c.Token, Holder: holder, After: h.after, Offset: int64(h.offset), Within: int64(h.within)})
	return b
}

// granted checks that the owner node written, whose stat is st, is owned by
// the session that wrote it and that the client still has (see session),
// and is the holding's; it records the node's identity if the holding has
// none yet.
func (h *holding) granted(id int64, st *zk.Stat, path string) error {
	now := h.sess.conn.SessionID()
	switch {
	case st == nil:
		return fmt.Errorf("ZooKeeper answered no stat for %s", path)
	case st.EphemeralOwner != now:
		return fmt.Errorf("%w: machine ID %d: its node %s is owned by session %#x, but the client is now on session %#x: the one it was sent on expired",
			machineid.ErrLeaseLost, id, path, st.EphemeralOwner, now)
	case h.czxid != 0 && st.Czxid != h.czxid:
		return fmt.Errorf("%w: machine ID %d: its node %s was made anew (zxid %#x, not %#x)", machineid.ErrLeaseLost, id, path, st.Czxid, h.czxid)
	}
	h.session, h.czxid = st.EphemeralOwner, st.Czxid
	return nil
}

// adopt reads the versions of the holding's nodes again, after a write
// failed on a version that a write of the holding's, whose answer was
// lost, moved. The mark first: if the owner node read next is still the
// holding's (its creation zxid), no one has taken the ID since it was
// made, so the mark read was the holding's own.
func (s *store) adopt(ctx context.Context, h *holding) error {
	data, mst, err := h.sess.get(ctx, s.markPath(h.id))
	if err != nil {
		return fmt.Errorf("reading the mark of machine ID %d: %w", h.id, err)
	}
	mark, err := parseMark(s.markPath(h.id), data)
	if err != nil {
		return err
	}
	_, ost, err := h.sess.get(ctx, s.ownerPath(h.id))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: machine ID %d: its node %s is gone: ZooKeeper expired or closed session %#x", machineid.ErrLeaseLost, h.id, s.ownerPath(h.id), h.session)
	case err != nil:
		return fmt.Errorf("reading the owner of machine ID %d: %w", h.id, err)
	case ost.Czxid != h.czxid:
		return fmt.Errorf("%w: machine ID %d: its node %s was made anew, by another holder", machineid.ErrLeaseLost, h.id, s.ownerPath(h.id))
	}
	h.ownerVersion, h.markVersion, h.mark = ost.Version, mst.Version, mark
	return nil
}
