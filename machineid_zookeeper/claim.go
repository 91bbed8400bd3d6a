package machineid_zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ringflake/ringflake/machineid"
)

// makeNodes makes the prefix's nodes, which a take finds missing the
// first time a prefix is used (or if they were deleted).
func (s *store) makeNodes(ctx context.Context, sess *session) error {
	parts := strings.Split(s.prefix, "/")[1:]
	var paths []string
	for i := range parts {
		paths = append(paths, "/"+strings.Join(parts[:i+1], "/"))
	}
	for _, p := range append(paths, s.prefix+"/owner", s.prefix+"/mark") {
		if err := sess.create(ctx, p); err != nil {
			return fmt.Errorf("creating %s: %w", p, err)
		}
	}
	return nil
}

// claim takes for h the ID that mine or pick chooses, and raises its mark
// to c.Until, in one transaction that holds if the ID is still free and its
// mark as read; if it is not, it reads again and picks again, until ctx
// ends.
func (s *store) claim(ctx context.Context, c machineid.Claim, h *holding) (machineid.Grant, error) {
	if g, ok, err := s.mine(ctx, c, h); ok || err != nil {
		return g, err
	}
	for {
		owners, marks, err := s.list(ctx, h.sess)
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.makeNodes(ctx, h.sess); err != nil {
				return machineid.Grant{}, err
			}
			continue
		}
		if err != nil {
			return machineid.Grant{}, fmt.Errorf("listing the IDs under %s: %w", s.prefix, err)
		}
		if err := h.sess.negotiated(c.TTL); err != nil { // known once the session answered
			return machineid.Grant{}, err
		}
		p, err := s.pick(ctx, c, h.sess, owners, marks)
		if err != nil {
			return machineid.Grant{}, err
		}
		if p.id < 0 {
			return machineid.Grant{}, s.exhausted(ctx, c, h.sess, owners)
		}
		// The other holders' reports are read while the claim is written.
		peers := make(chan []report, 1)
		go func() { peers <- s.reports(ctx, h.sess, p.id, owners) }()
		g, err := s.write(ctx, c, h, p)
		others := <-peers
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
			continue // someone took the ID, or moved its mark, first
		}
		if err != nil {
			return machineid.Grant{}, err
		}
		g.Clock = reference(g.Clock, others)
		return g, nil
	}
}

// list returns the names of the owner and mark nodes, read at once.
func (s *store) list(ctx context.Context, sess *session) (owners, marks []string, err error) {
	var oerr, merr error
	var wg sync.WaitGroup
	wg.Go(func() { owners, oerr = sess.children(ctx, s.prefix+"/owner") })
	wg.Go(func() { marks, merr = sess.children(ctx, s.prefix+"/mark") })
	wg.Wait()
	if oerr != nil {
		return nil, nil, oerr
	}
	return owners, marks, merr
}

// picked is an ID that pick chose, with its mark as read.
type picked struct {
	id      int64
	mark    int64 // ns; 0 for none
	version int32 // the mark node's; -1 if there is none
}

// pick returns the ID to claim in c's range, given the IDs with an owner
// node and those with a mark node: the lowest free one whose mark is
// before the holder's clock (c.Now), so that it can issue at once; else
// the free one with the earliest mark; else id -1. It reads the marks of
// free IDs, from the lowest, until one is before the clock; those above
// the lowest free ID without a mark node need not be read. So a take reads
// at most the marks of the IDs ever held, however wide the range.
func (s *store) pick(ctx context.Context, c machineid.Claim, sess *session, owners, marks []string) (picked, error) {
	taken := s.ids(c, owners)
	marked := s.ids(c, marks)
	bare := int64(-1) // the lowest free ID without a mark node
	// Among the first len(taken)+len(marked)+1 IDs one has neither node.
	for n := c.Lo; ; n++ {
		if !taken[n] && !marked[n] {
			bare = n
			break
		}
		if n == c.Hi || n-c.Lo >= int64(len(taken)+len(marked)) {
			break
		}
	}
	var free []int64
	for n := range marked {
		if !taken[n] && (bare < 0 || n < bare) {
			free = append(free, n)
		}
	}
	slices.Sort(free)
	best := picked{id: bare, version: -1}
	now := c.Now.UnixNano()
	for batch := range slices.Chunk(free, 16) {
		read, err := s.readMarks(ctx, sess, batch)
		if err != nil {
			return picked{}, err
		}
		for _, p := range read {
			if p.mark < now {
				return p, nil
			}
			if best.id < 0 || best.mark > 0 && p.mark < best.mark {
				best = p
			}
		}
	}
	return best, nil
}

// ids returns the IDs in c's range among the names of nodes.
func (s *store) ids(c machineid.Claim, names []string) map[int64]bool {
	m := make(map[int64]bool, len(names))
	for _, name := range names {
		if n, err := strconv.ParseInt(name, 10, 64); err == nil && n >= c.Lo && n <= c.Hi {
			m[n] = true
		}
	}
	return m
}

// readMarks reads the marks of ids at once; one deleted meanwhile reads as
// none.
func (s *store) readMarks(ctx context.Context, sess *session, ids []int64) ([]picked, error) {
	out := make([]picked, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			data, st, err := sess.get(ctx, s.markPath(id))
			out[i] = picked{id: id, version: -1}
			switch {
			case errors.Is(err, zk.ErrNoNode):
			case err != nil:
				errs[i] = fmt.Errorf("reading the mark of machine ID %d: %w", id, err)
			default:
				out[i].mark, errs[i] = parseMark(s.markPath(id), data)
				out[i].version = st.Version
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// write claims p.id for h: it creates the owner node and writes the mark,
// in one transaction, and reads ZooKeeper's clock from the mark's write.
// Each node is written after it is made, so that the answer carries its
// stat.
func (s *store) write(ctx context.Context, c machineid.Claim, h *holding, p picked) (machineid.Grant, error) {
	until := p.mark // a zero c.Until raises no mark, but still writes it
	if !c.Until.IsZero() {
		until = max(p.mark, c.Until.UnixNano())
	}
	h.id, h.session, h.czxid, h.after = p.id, 0, 0, p.mark
	owner, mark, rec := s.ownerPath(p.id), s.markPath(p.id), h.record(c)
	ops := []any{
		&zk.CreateRequest{Path: owner, Data: rec, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: owner, Data: rec, Version: 0},
	}
	if p.version < 0 {
		ops = append(ops, &zk.CreateRequest{Path: mark, Data: formatMark(until), Acl: zk.WorldACL(zk.PermAll)})
	}
	ops = append(ops, &zk.SetDataRequest{Path: mark, Data: formatMark(until), Version: max(p.version, 0)})
	start := time.Now()
	res, err := h.sess.multi(ctx, ops...)
	rtt := time.Since(start)
	if err != nil {
		return machineid.Grant{}, fmt.Errorf("claiming machine ID %d: %w", p.id, err)
	}
	if err := h.granted(p.id, res[1].Stat, owner); err != nil {
		return machineid.Grant{}, err
	}
	ms := res[len(res)-1].Stat
	h.ownerVersion, h.markVersion, h.mark = res[1].Stat.Version, ms.Version, until
	return s.grant(c, h, ms, rtt), nil
}

// grant is a take's Grant for h, whose mark write's stat is ms.
func (s *store) grant(c machineid.Claim, h *holding, ms *zk.Stat, rtt time.Duration) machineid.Grant {
	g := machineid.Grant{ID: h.id, Clock: h.measure(c, ms, rtt)}
	if h.mark > 0 {
		g.Until = time.Unix(0, h.mark)
	}
	if h.after > 0 {
		g.After = time.Unix(0, h.after)
	}
	return g
}

// mine finds the ID that a take of h's, whose answer was lost, claimed on
// h's session, and renews it: ok is false if there is none.
func (s *store) mine(ctx context.Context, c machineid.Claim, h *holding) (machineid.Grant, bool, error) {
	if h.id < 0 {
		return machineid.Grant{}, false, nil
	}
	data, st, err := h.sess.get(ctx, s.ownerPath(h.id))
	var rec record
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return machineid.Grant{}, false, nil
	case err != nil:
		return machineid.Grant{}, false, fmt.Errorf("reading the owner of machine ID %d: %w", h.id, err)
	case json.Unmarshal(data, &rec) != nil || rec.Token != c.Token || st.EphemeralOwner != h.sess.conn.SessionID():
		return machineid.Grant{}, false, nil
	}
	h.session, h.czxid, h.after = st.EphemeralOwner, st.Czxid, rec.After
	if err := s.adopt(ctx, h); err != nil {
		return machineid.Grant{}, false, err
	}
	g, err := s.Renew(ctx, c, h.id)
	if errors.Is(err, machineid.ErrLeaseLost) {
		return machineid.Grant{}, false, nil // gone meanwhile: take afresh
	} else if err != nil {
		return g, false, err
	}
	if c.Until.IsZero() {
		g.Until = time.Time{} // the mark as it stands
		if h.mark > 0 {
			g.Until = time.Unix(0, h.mark)
		}
	}
	if h.after > 0 {
		g.After = time.Unix(0, h.after)
	}
	return g, true, nil
}

// exhausted is claim's error when every ID of c's range is held, naming
// the first few holders.
func (s *store) exhausted(ctx context.Context, c machineid.Claim, sess *session, owners []string) error {
	var held []int64
	for n := range s.ids(c, owners) {
		held = append(held, n)
	}
	slices.Sort(held)
	var named []string
	for _, n := range held[:min(len(held), 3)] {
		data, st, err := sess.get(ctx, s.ownerPath(n))
		var rec record
		if err != nil || json.Unmarshal(data, &rec) != nil {
			continue
		}
		named = append(named, fmt.Sprintf("%d by %s (session %#x)", n, rec.Holder, st.EphemeralOwner))
	}
	err := fmt.Errorf("%w: machine IDs %d..%d held, each by a session's node under %s/owner", machineid.ErrExhausted, c.Lo, c.Hi, s.prefix)
	if len(named) > 0 {
		err = fmt.Errorf("%w: %s; each frees when ZooKeeper ends its holder's session, a session timeout after it last heard from it", err, strings.Join(named, ", "))
	}
	return err
}
