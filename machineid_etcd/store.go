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
func (l *Leaser) markKey(id int64) string { return l.cfg.prefix + "mark/" + strconv.FormatInt(id, 10) }

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

// claim takes the lowest free ID in the range on the held etcd lease and
// returns it with the mark it had (0 if none). An ID whose owner key
// already holds this Leaser's token, left by a call that timed out, is
// taken first. The caller holds the calls lock.
func (l *Leaser) claim(parent, ctx context.Context, timeout time.Duration) (id, mark int64, err error) {
	owners := l.cfg.prefix + "owner/"
	cctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := l.client.Get(cctx, owners, clientv3.WithPrefix())
	cancel()
	if err != nil {
		return -1, 0, l.callErr(parent, cctx, "listing the IDs held", timeout, err)
	}
	kvs := resp.Kvs
	for {
		id, mine, held := l.pick(kvs)
		if id < 0 {
			return -1, 0, fmt.Errorf("%w: all of %d..%d are held (%d owner keys under %q)", ErrExhausted, l.cfg.lo, l.cfg.hi, held, owners)
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(l.ownerKey(id)), "=", 0)
		if mine {
			cmp = clientv3.Compare(clientv3.Value(l.ownerKey(id)), "=", l.token)
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		tr, err := l.client.Txn(cctx).If(cmp).
			Then(clientv3.OpPut(l.ownerKey(id), l.token, clientv3.WithLease(l.held.lease)), clientv3.OpGet(l.markKey(id))).
			Else(clientv3.OpGet(owners, clientv3.WithPrefix())).
			Commit()
		cancel()
		if err != nil {
			return -1, 0, l.callErr(parent, cctx, fmt.Sprintf("claiming machine ID %d", id), timeout, err)
		}
		if tr.Succeeded {
			mark, err := l.parseMark(id, tr.Responses[1].GetResponseRange().Kvs)
			return id, mark, err
		}
		kvs = tr.Responses[0].GetResponseRange().Kvs // someone took id first: look again
	}
}

// pick returns the ID to claim given the owner keys: the lowest one of this
// Leaser's own in the range (mine), else the lowest in the range without
// an owner, else -1. held counts the owner keys in the range.
func (l *Leaser) pick(kvs []*mvccpb.KeyValue) (id int64, mine bool, held int) {
	owners := l.cfg.prefix + "owner/"
	taken := make(map[int64]bool, len(kvs))
	own := int64(-1)
	for _, kv := range kvs {
		n, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), owners), 10, 64)
		if err != nil || n < l.cfg.lo || n > l.cfg.hi {
			continue
		}
		held++
		taken[n] = true
		if string(kv.Value) == l.token && (own < 0 || n < own) {
			own = n
		}
	}
	if own >= 0 {
		return own, true, held
	}
	for n := l.cfg.lo; n <= l.cfg.hi; n++ {
		if !taken[n] {
			return n, false, held
		}
		if n == math.MaxInt64 {
			break
		}
	}
	return -1, false, held
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
