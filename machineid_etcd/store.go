package machineid_etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The keys of machine ID n are prefix+"owner/n", whose value is the
// holder's token and which is attached to the holder's etcd lease, so etcd
// deletes it when the lease expires; and prefix+"mark/n", without a lease,
// whose value is the latest time, in decimal nanoseconds since the Unix
// epoch on the holder's clock, that any holder of n may have issued.
//
// Every write that depends on what is stored compares first, in one
// transaction: a claim creates the owner key only if it is absent (or
// already this Leaser's), and reads the mark in the same transaction; a
// mark is written only while the owner key holds this Leaser's token on
// its current lease. So a holder that lost its key can no longer raise the
// mark, and the next holder's After, read when it claimed, is at or past
// every Until an earlier holder was given.

func (l *Leaser) ownerKey(id int64) string {
	return l.cfg.prefix + "owner/" + strconv.FormatInt(id, 10)
}

func (l *Leaser) markKey(id int64) string {
	return l.cfg.prefix + "mark/" + strconv.FormatInt(id, 10)
}

// ensureLease renews the etcd lease held, or grants one if there is none
// or etcd no longer has it. The caller holds the calls lock.
func (l *Leaser) ensureLease(parent, ctx context.Context, timeout time.Duration) error {
	if l.held.lease != 0 {
		err := l.keepAlive(parent, ctx, timeout)
		if !errors.Is(err, ErrLeaseLost) {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sent := time.Now() // before the call: etcd's TTL starts later
	resp, err := l.client.Grant(cctx, int64(l.cfg.ttl/time.Second))
	if err != nil {
		return l.callErr(parent, cctx, "granting an etcd lease", timeout, err)
	}
	l.held = holding{lease: resp.ID, sent: sent, ttl: l.granted(resp.TTL), id: -1}
	return nil
}

// keepAlive renews the etcd lease once. If etcd no longer has it, it drops
// the lease and the ID on it and returns an error wrapping ErrLeaseLost.
// The caller holds the calls lock.
func (l *Leaser) keepAlive(parent, ctx context.Context, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sent := time.Now()
	resp, err := l.client.KeepAliveOnce(cctx, l.held.lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		lost := fmt.Errorf("%w: machine ID %d: etcd lease %x expired or was revoked", ErrLeaseLost, l.held.id, int64(l.held.lease))
		l.held = holding{id: -1}
		return lost
	case err != nil:
		return l.callErr(parent, cctx, fmt.Sprintf("renewing etcd lease %x", int64(l.held.lease)), timeout, err)
	}
	l.held.sent, l.held.ttl = sent, l.granted(resp.TTL)
	return nil
}

// granted returns the TTL to count the lease's life by: the one asked for,
// or etcd's answer if shorter, which etcd never makes it.
func (l *Leaser) granted(seconds int64) time.Duration {
	if seconds <= 0 || seconds >= math.MaxInt64/int64(time.Second) {
		return l.cfg.ttl
	}
	return min(l.cfg.ttl, time.Duration(seconds)*time.Second)
}

// claim takes a free ID in the range on the held etcd lease (see pick)
// and returns it with the mark it had, read in the same transaction (0 if
// none). The caller holds the calls lock.
func (l *Leaser) claim(parent, ctx context.Context, timeout time.Duration) (id, mark int64, err error) {
	// Both lists in one transaction, so they are read at one revision.
	lists := []clientv3.Op{
		clientv3.OpGet(l.cfg.prefix+"owner/", clientv3.WithPrefix()),
		clientv3.OpGet(l.cfg.prefix+"mark/", clientv3.WithPrefix()),
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	tr, err := l.client.Txn(cctx).Then(lists...).Commit()
	cancel()
	if err != nil {
		return -1, 0, l.callErr(parent, cctx, "listing the IDs held", timeout, err)
	}
	for {
		owners, marks := tr.Responses[0].GetResponseRange().Kvs, tr.Responses[1].GetResponseRange().Kvs
		id, mine := l.pick(owners, marks, l.cfg.clock().UnixNano())
		if id < 0 {
			return -1, 0, fmt.Errorf("%w: all of %d..%d are held (%d owner keys under %q)",
				ErrExhausted, l.cfg.lo, l.cfg.hi, len(owners), l.cfg.prefix+"owner/")
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(l.ownerKey(id)), "=", 0)
		if mine {
			cmp = clientv3.Compare(clientv3.Value(l.ownerKey(id)), "=", l.token)
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		tr, err = l.client.Txn(cctx).If(cmp).
			Then(clientv3.OpPut(l.ownerKey(id), l.token, clientv3.WithLease(l.held.lease)), clientv3.OpGet(l.markKey(id))).
			Else(lists...).
			Commit()
		cancel()
		if err != nil {
			return -1, 0, l.callErr(parent, cctx, fmt.Sprintf("claiming machine ID %d", id), timeout, err)
		}
		if tr.Succeeded {
			mark, err := l.parseMark(id, tr.Responses[1].GetResponseRange().Kvs)
			return id, mark, err
		}
		// Someone took id first; the Else branch listed the keys again.
	}
}

// pick returns the ID to claim, given the owner and mark keys and the
// clock now: an ID in the range whose owner key holds this Leaser's token
// (mine), left by a claim whose answer was lost; else the lowest free one
// whose mark is before now, so that its holder can issue at once; else the
// free one with the earliest mark; else -1.
func (l *Leaser) pick(owners, marks []*mvccpb.KeyValue, now int64) (id int64, mine bool) {
	taken := make(map[int64]bool, len(owners))
	for _, kv := range owners {
		if n, ok := l.idOf(kv.Key, "owner/"); ok {
			if string(kv.Value) == l.token {
				return n, true
			}
			taken[n] = true
		}
	}
	markOf := make(map[int64]int64, len(marks))
	for _, kv := range marks {
		if n, ok := l.idOf(kv.Key, "mark/"); ok {
			markOf[n], _ = strconv.ParseInt(string(kv.Value), 10, 64)
		}
	}
	best := int64(-1)
	// An ID without a mark key ends the loop, so it runs at most
	// len(owners)+len(marks)+1 times, however wide the range.
	for n := l.cfg.lo; n <= l.cfg.hi; n++ {
		if !taken[n] {
			if markOf[n] < now {
				return n, false
			}
			if best < 0 || markOf[n] < markOf[best] {
				best = n
			}
		}
		if n == math.MaxInt64 {
			break
		}
	}
	return best, false
}

// idOf parses the machine ID in a key of the given kind ("owner/" or
// "mark/"), and reports whether it is one and in the range.
func (l *Leaser) idOf(key []byte, kind string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(string(key), l.cfg.prefix+kind), 10, 64)
	return n, err == nil && n >= l.cfg.lo && n <= l.cfg.hi
}

// parseMark reads a mark key's value, 0 if the key is absent.
func (l *Leaser) parseMark(id int64, kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("machineid_etcd: %s holds %q, not a time in decimal nanoseconds; it was not written by this package", l.markKey(id), kvs[0].Value)
	}
	return v, nil
}

// raise writes the mark of the held ID: the latest of floor and the clock
// plus the TTL, so the holder may issue until then, and returns it. It
// writes only while the owner key holds this Leaser's token on its etcd
// lease; if it does not, it drops the ID and returns an error wrapping
// ErrLeaseLost. The caller holds the calls lock.
func (l *Leaser) raise(parent, ctx context.Context, timeout time.Duration, floor int64) (int64, error) {
	id := l.held.id
	mark := max(floor, l.cfg.clock().Add(l.cfg.ttl).UnixNano())
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr, err := l.client.Txn(cctx).
		If(clientv3.Compare(clientv3.Value(l.ownerKey(id)), "=", l.token),
			clientv3.Compare(clientv3.LeaseValue(l.ownerKey(id)), "=", l.held.lease)).
		Then(clientv3.OpPut(l.markKey(id), strconv.FormatInt(mark, 10))).
		Else(clientv3.OpGet(l.ownerKey(id))).
		Commit()
	if err != nil {
		return 0, l.callErr(parent, cctx, fmt.Sprintf("raising the mark of machine ID %d", id), timeout, err)
	}
	if tr.Succeeded {
		return mark, nil
	}
	what := "was deleted"
	if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		what = "was taken by another owner"
		if string(kvs[0].Value) == l.token {
			what = fmt.Sprintf("moved to etcd lease %x", kvs[0].Lease)
		}
	}
	l.held.id = -1
	return 0, fmt.Errorf("%w: machine ID %d: its key %s %s", ErrLeaseLost, id, l.ownerKey(id), what)
}

// giveUp releases what the Leaser holds: it lowers the held ID's mark to
// max(issued, the mark the ID had when claimed) and deletes its owner key,
// if the key still holds this Leaser's token, and then revokes the etcd
// lease. The zero issued leaves the mark alone. The caller holds the calls
// lock.
func (l *Leaser) giveUp(issued time.Time) error {
	h := l.held
	l.held = holding{id: -1}
	if h.id < 0 && h.lease == 0 {
		return nil
	}
	l.redial() // a connection still backing off after an outage would fail the calls
	var errs []error
	if h.id >= 0 && !issued.IsZero() {
		mark := max(issued.UnixNano(), h.after, 0)
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.callTimeout)
		_, err := l.client.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(l.ownerKey(h.id)), "=", l.token)).
			Then(clientv3.OpPut(l.markKey(h.id), strconv.FormatInt(mark, 10)), clientv3.OpDelete(l.ownerKey(h.id))).
			Commit()
		cancel()
		if err != nil {
			errs = append(errs, callFailed(ctx, fmt.Sprintf("lowering the mark of machine ID %d", h.id), l.cfg.callTimeout, err))
		}
	}
	if h.lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.callTimeout)
		_, err := l.client.Revoke(ctx, h.lease)
		cancel()
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			errs = append(errs, callFailed(ctx, fmt.Sprintf("revoking etcd lease %x", int64(h.lease)), l.cfg.callTimeout, err))
		}
	}
	return errors.Join(errs...)
}
