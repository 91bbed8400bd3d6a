package machineid_etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// limits are etcd's bounds on the common options: it counts lease TTLs in
// whole seconds. Take and Renew read the live holders' clocks (see
// fleetClock).
var limits = machineid.Limits{Name: "machineid_etcd", MinTTL: time.Second, TTLStep: time.Second, Clock: true}

// defaultPrefix is the prefix of every key, unless WithPrefix says another.
const defaultPrefix = "ringflake/machineid/"

// settings are the store's own options.
type settings struct {
	prefix string // of every key; not empty
}

// WithPrefix sets the prefix of every key the Holder writes: the owner of
// machine ID n is at prefix+"owner/n", attached to the holder's etcd
// lease, and its mark at prefix+"mark/n", kept without a lease. Holders
// that share a prefix share the IDs. "", the default, means
// "ringflake/machineid/".
func WithPrefix(p string) machineid.Option {
	return machineid.StoreOption("machineid_etcd.WithPrefix", func(s *settings) { s.prefix = p })
}

// New returns a Holder of machine IDs leased from etcd through client,
// configured by the options of package machineid and [WithPrefix]. It does
// not contact etcd: the first MachineID does. The client stays the
// caller's: Release does not close it, and closing it stops the Holder's
// calls as a crash would, leaving the lease to expire in etcd.
//
// New returns an error wrapping ringflake.ErrInvalidConfig, naming the
// value and what is valid, if client is nil or an option is out of range;
// the TTL must be a whole number of seconds from 1s to 1h.
func New(client *clientv3.Client, opts ...machineid.Option) (*machineid.Holder, error) {
	if client == nil {
		return nil, invalid("client", "nil", "a *clientv3.Client")
	}
	s := &store{client: client, held: map[string]*holding{}}
	h, err := machineid.NewHolder(s, &s.settings, limits, opts...)
	if err != nil {
		return nil, err
	}
	if s.prefix == "" {
		s.prefix = defaultPrefix
	}
	return h, nil
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}

// store is a [machineid.Store] in etcd. Each holding's token gets an etcd
// lease of its own, granted by its first Take, which owns the holding's
// owner key: so etcd frees the ID a TTL after the last renewal, and
// revoking the lease frees whatever the token holds.
type store struct {
	client *clientv3.Client // written once by New
	settings

	// held is what each token holds, by token: the current holding's, and
	// one whose Release has yet to come. The Holder's calls, one at a time,
	// are the only readers and writers.
	held map[string]*holding
}

// holding is what one token holds in etcd, as far as the store knows.
type holding struct {
	lease clientv3.LeaseID // the etcd lease granted for the token, 0 if none
	mark  int64            // the mark last written for the ID held, ns since the Unix epoch
}

var _ machineid.Store = (*store)(nil)

// Take renews the token's etcd lease, or grants one, and then claims an ID
// on it (see claim). If the lease runs out before the claim reaches etcd,
// as it does when etcd answers slower than the TTL, the claim writes
// nothing, and Take grants another and claims again, until ctx ends.
func (s *store) Take(ctx context.Context, c machineid.Claim) (_ machineid.Grant, err error) {
	defer s.redialAfter(&err)
	h := s.held[c.Token]
	if h == nil {
		h = &holding{}
		s.held[c.Token] = h
	}
	if h.lease != 0 {
		_, err := s.client.KeepAliveOnce(ctx, h.lease)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			h.lease = 0
		} else if err != nil {
			return machineid.Grant{}, fmt.Errorf("renewing etcd lease %x: %w", int64(h.lease), err)
		}
	}
	for {
		if h.lease == 0 {
			resp, err := s.client.Grant(ctx, int64(c.TTL/time.Second))
			if err != nil {
				return machineid.Grant{}, fmt.Errorf("granting an etcd lease: %w", err)
			}
			h.lease = resp.ID
		}
		g, err := s.claim(ctx, c, h)
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return g, err
		}
		h.lease = 0
	}
}

// Renew renews the token's etcd lease and then raises the mark of id,
// which it writes only while id's owner key holds the token on that lease.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (_ machineid.Grant, err error) {
	defer s.redialAfter(&err)
	h := s.held[c.Token]
	if h == nil || h.lease == 0 {
		return machineid.Grant{}, fmt.Errorf("%w: machine ID %d: this holding has no etcd lease", machineid.ErrLeaseLost, id)
	}
	ka, err := s.client.KeepAliveOnce(ctx, h.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		lease := h.lease
		h.lease = 0
		return machineid.Grant{}, fmt.Errorf("%w: machine ID %d: etcd lease %x expired or was revoked", machineid.ErrLeaseLost, id, int64(lease))
	} else if err != nil {
		return machineid.Grant{}, fmt.Errorf("renewing etcd lease %x: %w", int64(h.lease), err)
	}
	mark := max(h.mark, c.Until.UnixNano())
	tr, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(s.ownerKey(id)), "=", c.Token),
			clientv3.Compare(clientv3.LeaseValue(s.ownerKey(id)), "=", h.lease)).
		Then(clientv3.OpPut(s.markKey(id), strconv.FormatInt(mark, 10)), s.putClock(c, h.lease, termOf(ka.ResponseHeader)), s.listClocks()).
		Else(clientv3.OpGet(s.ownerKey(id))).
		Commit()
	if err != nil {
		return machineid.Grant{}, fmt.Errorf("raising the mark of machine ID %d: %w", id, err)
	}
	if !tr.Succeeded {
		what := "was deleted"
		if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			what = "was taken by another owner"
			if string(kvs[0].Value) == c.Token {
				what = fmt.Sprintf("moved to etcd lease %x", kvs[0].Lease)
			}
		}
		return machineid.Grant{}, fmt.Errorf("%w: machine ID %d: its key %s %s", machineid.ErrLeaseLost, id, s.ownerKey(id), what)
	}
	h.mark = mark
	clocks := tr.Responses[2].GetResponseRange().Kvs
	return machineid.Grant{ID: id, Until: time.Unix(0, mark), Clock: s.fleetClock(ctx, c, clocks)}, nil
}

// Release lowers id's mark to issued and deletes its owner key, if the key
// still holds the token, and then revokes the token's etcd lease, which
// deletes every owner key on it: so id -1 frees whatever the token holds.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	h := s.held[c.Token]
	delete(s.held, c.Token) // the token is never used again
	if h == nil || h.lease == 0 {
		return nil
	}
	s.redial() // a connection still backing off after an outage would fail the calls
	if id >= 0 && !issued.IsZero() {
		_, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(s.ownerKey(id)), "=", c.Token)).
			Then(clientv3.OpPut(s.markKey(id), strconv.FormatInt(issued.UnixNano(), 10)), clientv3.OpDelete(s.ownerKey(id))).
			Commit()
		if err != nil {
			return fmt.Errorf("lowering the mark of machine ID %d: %w", id, err)
		}
	}
	if _, err := s.client.Revoke(ctx, h.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("revoking etcd lease %x: %w", int64(h.lease), err)
	}
	return nil
}

// redialAfter makes the client's failed connections dial again at once if
// *err is not nil, rather than on gRPC's backoff, which grows to 120s by
// default: after an outage the Holder must reach etcd again within the
// TTL.
func (s *store) redialAfter(err *error) {
	if *err != nil {
		s.redial()
	}
}

// redial uses grpc.ClientConn.ResetConnectBackoff through an interface,
// so that the build does not depend on that experimental method; without
// it, redial does nothing.
func (s *store) redial() {
	if c, ok := any(s.client.ActiveConnection()).(interface{ ResetConnectBackoff() }); ok {
		c.ResetConnectBackoff()
	}
}
