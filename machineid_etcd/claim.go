package machineid_etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake/machineid"
)

// The keys of machine ID n are prefix+"owner/n", whose value is the
// holder's token and which is attached to the holding's etcd lease, so
// etcd deletes it when the lease expires; and prefix+"mark/n", without a
// lease, whose value is the latest time, in decimal nanoseconds since the
// Unix epoch on the holder's clock, that any holder of n may have issued.
//
// Every write that depends on what is stored compares first, in one
// transaction: a claim creates the owner key only if it is absent (or
// already the token's) and the mark has not moved since it was read; a
// renewal raises the mark only while the owner key holds the token on its
// etcd lease. So a holder that lost its key can no longer raise the mark,
// and the next holder's After, read when it claimed, is at or past every
// Until an earlier holder was given.

func (s *store) ownerKey(id int64) string { return s.prefix + "owner/" + strconv.FormatInt(id, 10) }

func (s *store) markKey(id int64) string { return s.prefix + "mark/" + strconv.FormatInt(id, 10) }

// claim takes the ID that pick chooses on h's etcd lease, and raises its
// mark to c.Until, in one transaction that holds if the ID is still free
// and its mark as listed; if it is not, it lists the keys again and picks
// again, until ctx ends.
func (s *store) claim(ctx context.Context, c machineid.Claim, h *holding) (machineid.Grant, error) {
	// The lists in one transaction, so they are read at one revision; with
	// them, a few holders' clock records, for the reading.
	lists := []clientv3.Op{
		clientv3.OpGet(s.prefix+"owner/", clientv3.WithPrefix()),
		clientv3.OpGet(s.prefix+"mark/", clientv3.WithPrefix()),
		s.listClocks(),
	}
	tr, err := s.client.Txn(ctx).Then(lists...).Commit()
	if err != nil {
		return machineid.Grant{}, fmt.Errorf("listing the IDs held: %w", err)
	}
	for {
		owners, marks := tr.Responses[0].GetResponseRange().Kvs, tr.Responses[1].GetResponseRange().Kvs
		clocks := tr.Responses[2].GetResponseRange().Kvs
		id, mine := s.pick(c, owners, marks)
		if id < 0 {
			return machineid.Grant{}, s.exhausted(ctx, c, owners)
		}
		after, rev, err := s.markOf(id, marks)
		if err != nil {
			return machineid.Grant{}, err
		}
		owned := clientv3.Compare(clientv3.CreateRevision(s.ownerKey(id)), "=", 0)
		if mine {
			owned = clientv3.Compare(clientv3.Value(s.ownerKey(id)), "=", c.Token)
		}
		until := after // a zero c.Until raises no mark
		if !c.Until.IsZero() {
			until = max(after, c.Until.UnixNano())
		}
		then := []clientv3.Op{clientv3.OpPut(s.ownerKey(id), c.Token, clientv3.WithLease(h.lease))}
		if until > 0 {
			then = append(then, clientv3.OpPut(s.markKey(id), strconv.FormatInt(until, 10)))
		}
		tr, err = s.client.Txn(ctx).
			If(owned, clientv3.Compare(clientv3.ModRevision(s.markKey(id)), "=", rev)).
			Then(then...).
			Else(lists...).
			Commit()
		if err != nil {
			return machineid.Grant{}, fmt.Errorf("claiming machine ID %d: %w", id, err)
		}
		if tr.Succeeded {
			h.mark = until
			g := machineid.Grant{ID: id, Clock: s.fleetClock(ctx, c, clocks)}
			if until > 0 {
				g.Until = time.Unix(0, until)
			}
			if after > 0 {
				g.After = time.Unix(0, after)
			}
			return g, nil
		}
		// Someone took id or moved its mark first; Else listed the keys again.
	}
}

// pick returns the ID to claim in c's range, given the owner and mark
// keys: one whose owner key holds c.Token (mine), left by a claim whose
// answer was lost; else the lowest free one whose mark is before the
// holder's clock (c.Now), so that it can issue at once; else the
// free one with the earliest mark; else -1.
func (s *store) pick(c machineid.Claim, owners, marks []*mvccpb.KeyValue) (id int64, mine bool) {
	taken := make(map[int64]bool, len(owners))
	for _, kv := range owners {
		if n, ok := s.idOf(c, kv.Key, "owner/"); ok {
			if string(kv.Value) == c.Token {
				return n, true
			}
			taken[n] = true
		}
	}
	markOf := make(map[int64]int64, len(marks))
	for _, kv := range marks {
		if n, ok := s.idOf(c, kv.Key, "mark/"); ok {
			markOf[n], _ = strconv.ParseInt(string(kv.Value), 10, 64)
		}
	}
	now := c.Now.UnixNano()
	best := int64(-1)
	// An ID without a mark key ends the loop, so it runs at most
	// len(owners)+len(marks)+1 times, however wide the range.
	for n := c.Lo; ; n++ {
		if !taken[n] {
			if markOf[n] < now {
				return n, false
			}
			if best < 0 || markOf[n] < markOf[best] {
				best = n
			}
		}
		if n == c.Hi {
			return best, false
		}
	}
}

// exhausted is claim's error when every ID of c's range is held by owners:
// how many, and how soon the first frees.
func (s *store) exhausted(ctx context.Context, c machineid.Claim, owners []*mvccpb.KeyValue) error {
	var held []*mvccpb.KeyValue
	for _, kv := range owners {
		if _, ok := s.idOf(c, kv.Key, "owner/"); ok {
			held = append(held, kv)
		}
	}
	err := fmt.Errorf("%w: machine IDs %d..%d held, each by an owner key under %q (holders are random tokens)",
		machineid.ErrExhausted, c.Lo, c.Hi, s.prefix+"owner/")
	left, asked, ok := s.firstFree(ctx, held)
	switch {
	case ok && asked < len(held):
		err = fmt.Errorf("%w; the first of %d asked frees in at most %v", err, asked, left)
	case ok:
		err = fmt.Errorf("%w; the first frees in at most %v", err, left)
	}
	return err
}

// idOf parses the machine ID in a key of the given kind ("owner/" or
// "mark/"), and reports whether it is one and in c's range.
func (s *store) idOf(c machineid.Claim, key []byte, kind string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(string(key), s.prefix+kind), 10, 64)
	return n, err == nil && n >= c.Lo && n <= c.Hi
}

// markOf returns id's mark in marks, in ns, and its key's mod revision;
// 0 and 0 if it has none.
func (s *store) markOf(id int64, marks []*mvccpb.KeyValue) (mark, rev int64, err error) {
	key := s.markKey(id)
	for _, kv := range marks {
		if string(kv.Key) != key {
			continue
		}
		v, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("%s holds %q, not a time in decimal nanoseconds; it was not written by this package", key, kv.Value)
		}
		return v, kv.ModRevision, nil
	}
	return 0, 0, nil
}
