package machineid_zookeeper

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// limits are ZooKeeper's bounds on the common options: a session timeout
// counts whole milliseconds. Take reads ZooKeeper's clock (see clock.go).
var limits = machineid.Limits{Name: "machineid_zookeeper", TTLStep: time.Millisecond, Clock: true}

// defaultPrefix is the path under which the nodes are, unless WithPrefix
// says another.
const defaultPrefix = "/ringflake/machineid"

// settings are the store's own options.
type settings struct {
	prefix string // the parent of owner/ and mark/: absolute, no trailing slash
}

// WithPrefix sets the ZooKeeper path under which the Holder keeps its
// nodes: the lease of machine ID n is the ephemeral node prefix+"/owner/n",
// and its mark the persistent node prefix+"/mark/n". Holders that share a
// prefix share the IDs. "", the default, means "/ringflake/machineid"; a
// prefix must be an absolute path (a trailing slash is dropped).
func WithPrefix(p string) machineid.Option {
	return machineid.StoreOption("machineid_zookeeper.WithPrefix", func(s *settings) { s.prefix = p })
}

// New returns a Holder of machine IDs leased from the ZooKeeper ensemble
// at servers ("host:port" each), configured by the options of package
// machineid and [WithPrefix]. It does not contact ZooKeeper: the first
// MachineID does, opening a session of the Holder's own whose timeout is
// the TTL, which the lease lives and dies with. Release closes it.
//
// New returns an error wrapping ringflake.ErrInvalidConfig, naming the
// value and what is valid, if servers is empty, a server is not host:port,
// the prefix is not an absolute path, or an option is out of range. A TTL
// that the servers negotiate down (past their maxSessionTimeout) is refused
// by MachineID, with the same error.
func New(servers []string, opts ...machineid.Option) (*machineid.Holder, error) {
	return newHolder(servers, nil, opts)
}

// newHolder is New, with the dialer of the sessions' connections: nil for
// go-zookeeper's, a test's that it can cut.
func newHolder(servers []string, dialer zk.Dialer, opts []machineid.Option) (*machineid.Holder, error) {
	if len(servers) == 0 {
		return nil, invalid("servers", "none", "one host:port or more")
	}
	for _, s := range servers {
		if i := strings.LastIndexByte(s, ':'); i <= 0 || i == len(s)-1 {
			return nil, invalid("server", fmt.Sprintf("%q", s), "host:port")
		}
	}
	s := &store{servers: servers, dialer: dialer, held: map[string]*holding{}}
	h, err := machineid.NewHolder(s, &s.settings, limits, opts...)
	if err != nil {
		return nil, err
	}
	switch p := strings.TrimSuffix(s.prefix, "/"); {
	case s.prefix == "":
		s.prefix = defaultPrefix
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || p == "":
		return nil, invalid("prefix", fmt.Sprintf("%q", s.prefix), `an absolute ZooKeeper path, such as "/ringflake/machineid"`)
	default:
		s.prefix = p
	}
	return h, nil
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}

// store is a [machineid.Store] in ZooKeeper. Each holding's token gets a
// session of its own (see session.go), on which its take creates the ID's
// owner node: so ZooKeeper frees the ID when the session expires, and
// closing the session frees whatever the token holds.
type store struct {
	servers []string  // written once by New
	dialer  zk.Dialer // written once by New; nil for go-zookeeper's
	settings

	// held is what each token holds, by token: the current holding's, and
	// one whose Release has yet to come. The Holder's calls, one at a time,
	// are the only readers and writers.
	held map[string]*holding
}

var _ machineid.Store = (*store)(nil)

// Take opens the token's session if it has none, and claims an ID on it
// (see claim).
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	h := s.held[c.Token]
	if h == nil {
		h = &holding{id: -1}
		s.held[c.Token] = h
	}
	if h.sess == nil {
		sess, err := dial(s.servers, c.TTL, s.dialer)
		if err != nil {
			return machineid.Grant{}, err
		}
		h.sess = sess
	}
	return s.claim(ctx, c, h)
}

// Renew rewrites id's owner node and raises its mark, both only at the
// versions this holding last wrote, in one transaction, and then checks
// that the session it was sent on is the one that owns the node: so the
// write proves that no one else took id since, and it kept the session,
// which ZooKeeper then expires no sooner than a session timeout (the TTL)
// after it received the write.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	h := s.held[c.Token]
	if h == nil || h.sess == nil || h.id != id {
		return machineid.Grant{}, fmt.Errorf("%w: machine ID %d: this holding has no ZooKeeper session or node", machineid.ErrLeaseLost, id)
	}
	for {
		mark := h.mark // a zero c.Until (a take's trace, see mine) keeps it
		if !c.Until.IsZero() {
			mark = max(mark, c.Until.UnixNano())
		}
		start := time.Now()
		res, err := h.sess.multi(ctx,
			&zk.SetDataRequest{Path: s.ownerPath(id), Data: h.record(c), Version: h.ownerVersion},
			&zk.SetDataRequest{Path: s.markPath(id), Data: formatMark(mark), Version: h.markVersion})
		rtt := time.Since(start)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return machineid.Grant{}, fmt.Errorf("%w: machine ID %d: its node %s is gone: ZooKeeper expired or closed session %#x", machineid.ErrLeaseLost, id, s.ownerPath(id), h.session)
		case errors.Is(err, zk.ErrBadVersion):
			if err := s.adopt(ctx, h); err != nil {
				return machineid.Grant{}, err
			}
			continue // a renewal whose answer was lost moved the versions
		case err != nil:
			return machineid.Grant{}, err
		}
		if err := h.granted(id, res[0].Stat, s.ownerPath(id)); err != nil {
			return machineid.Grant{}, err
		}
		h.ownerVersion, h.markVersion, h.mark = res[0].Stat.Version, res[1].Stat.Version, mark
		return machineid.Grant{ID: id, Until: time.Unix(0, mark), Clock: h.measure(c, res[1].Stat, rtt)}, nil
	}
}

// Release lowers id's mark to issued and deletes its owner node, if the
// node is still this holding's, and then closes the token's session,
// which deletes every ephemeral node of it: so id -1 frees whatever the
// token holds.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	h := s.held[c.Token]
	delete(s.held, c.Token) // the token is never used again
	if h == nil || h.sess == nil {
		return nil
	}
	defer h.sess.close(ctx)
	if id < 0 || id != h.id || issued.IsZero() || h.czxid == 0 {
		return nil
	}
	for {
		_, err := h.sess.multi(ctx,
			&zk.SetDataRequest{Path: s.markPath(id), Data: formatMark(issued.UnixNano()), Version: h.markVersion},
			&zk.DeleteRequest{Path: s.ownerPath(id), Version: h.ownerVersion})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil // the session ended: the mark stays, higher
		case errors.Is(err, zk.ErrBadVersion):
			if s.adopt(ctx, h) != nil {
				return nil // the node is gone or another's: the mark stays
			}
		case err != nil:
			return fmt.Errorf("lowering the mark of machine ID %d: %w", id, err)
		default:
			return nil
		}
	}
}
