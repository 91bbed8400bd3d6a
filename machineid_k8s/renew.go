package machineid_k8s

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringflake/ringflake/machineid"
)

// tries bounds the updates of one Renew or Release that find the Lease
// changed by an earlier write of the same token, whose answer was lost.
const tries = 3

// Renew updates id's Lease, conditioned on the resourceVersion of the
// token's last write, with a new renewTime and the mark raised to c.Until.
// If the Lease changed since, Renew reads it again: if the token still
// holds it, an earlier call whose answer was lost wrote it, and Renew
// carries on from there; if not, the lease is lost.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	l := s.held[c.Token]
	if l == nil || l.Name != s.name(id) {
		var err error
		if l, err = s.fetch(ctx, id); err != nil {
			return machineid.Grant{}, err
		}
	}
	for range tries {
		if who := holder(l); who != s.holderOf(c.Token) {
			return machineid.Grant{}, s.lost(id, who)
		}
		mark, err := s.timeAt(l, markKey)
		if err != nil {
			return machineid.Grant{}, err
		}
		after, err := s.timeAt(l, afterKey)
		if err != nil {
			return machineid.Grant{}, err
		}
		until := later(mark, c.Until)
		got, err := s.leases.Update(ctx, s.holding(l, id, c, after, until, false), metav1.UpdateOptions{})
		if err == nil {
			s.held[c.Token] = got
			return machineid.Grant{ID: id, Until: until, Clock: serverClock(got)}, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return machineid.Grant{}, s.explain(fmt.Sprintf("updating the Lease %s of machine ID %d", s.name(id), id), err)
		}
		if l, err = s.fetch(ctx, id); err != nil {
			return machineid.Grant{}, err
		}
	}
	return machineid.Grant{}, fmt.Errorf("renewing the Lease %s of machine ID %d: it changed under each of %d updates", s.name(id), id, tries)
}

// fetch reads id's Lease. It returns an error wrapping machineid.ErrLeaseLost
// if there is none.
func (s *store) fetch(ctx context.Context, id int64) (*coordinationv1.Lease, error) {
	l, err := s.leases.Get(ctx, s.name(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: machine ID %d: the Lease %s/%s was deleted (%w)", machineid.ErrLeaseLost, id, s.namespace, s.name(id), err)
	case err != nil:
		return nil, s.explain(fmt.Sprintf("reading the Lease %s of machine ID %d", s.name(id), id), err)
	}
	return l, nil
}

// lost is Renew's error when id's Lease is held by who, not this token.
func (s *store) lost(id int64, who string) error {
	if who == "" {
		return fmt.Errorf("%w: machine ID %d: the Lease %s/%s was released by another hand", machineid.ErrLeaseLost, id, s.namespace, s.name(id))
	}
	return fmt.Errorf("%w: machine ID %d: the Lease %s/%s is held by %q, which took it over", machineid.ErrLeaseLost, id, s.namespace, s.name(id), who)
}

// Release clears the holderIdentity of id's Lease, if the token holds it,
// lowering its mark to issued unless issued is zero, so that the next
// holder may take it at once; for id -1, of every Lease in the range the
// token holds.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	l := s.held[c.Token]
	delete(s.held, c.Token) // the token is never used again
	if id < 0 {
		return s.releaseAll(ctx, c)
	}
	if l == nil || l.Name != s.name(id) {
		var err error
		l, err = s.leases.Get(ctx, s.name(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return s.explain(fmt.Sprintf("reading the Lease %s of machine ID %d", s.name(id), id), err)
		}
	}
	return s.free(ctx, c, l, issued)
}

// releaseAll frees every Lease in c's range that c.Token holds.
func (s *store) releaseAll(ctx context.Context, c machineid.Claim) error {
	list, err := s.leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return s.explain("listing the Leases", err)
	}
	for i := range list.Items {
		l := &list.Items[i]
		if _, ok := s.idOf(l.Name, c.Lo, c.Hi); ok && holder(l) == s.holderOf(c.Token) {
			if err := s.free(ctx, c, l, time.Time{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// free clears l's holder if it is c.Token, re-reading it if an earlier
// write of the token changed it.
func (s *store) free(ctx context.Context, c machineid.Claim, l *coordinationv1.Lease, issued time.Time) error {
	name := l.Name
	for range tries {
		if holder(l) != s.holderOf(c.Token) {
			return nil // not the token's: nothing to free
		}
		_, err := s.leases.Update(ctx, released(l, issued), metav1.UpdateOptions{})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return s.explain("releasing the Lease "+name, err)
		}
		l, err = s.leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return s.explain("reading the Lease "+name, err)
		}
	}
	return fmt.Errorf("releasing the Lease %s: it changed under each of %d updates", name, tries)
}
