package store

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringflake/ringflake/machineid"
	me "github.com/ringflake/ringflake/machineid_etcd"
)

// dialTimeout bounds each attempt to reach an etcd endpoint.
const dialTimeout = time.Second

// etcdLease is the backend of etcd:// URLs:
// etcd://host:port[,host:port...][?prefix=P], one client over every
// endpoint.
func etcdLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	endpoints, err := etcdEndpoints(u)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	for k := range q {
		if k != "prefix" {
			return nil, nil, fmt.Errorf("unexpected query parameter %q; etcd:// takes prefix=P", k)
		}
	}
	opts := c.common()
	if q.Has("prefix") {
		opts = append(opts, me.WithPrefix(q.Get("prefix")))
	}
	// clientv3.New does not dial; the Holder's first call does, bounded by
	// the generator's acquire timeout. Its log would break the one-line
	// error rule: failures reach the user as errors instead.
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, nil, err
	}
	l, err := me.New(client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return &reachable{l, endpoints}, func() { _ = client.Close() }, nil
}

// etcdEndpoints returns the host:port endpoints of an etcd:// URL, with
// port 2379 where none is given.
func etcdEndpoints(u *url.URL) ([]string, error) {
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("etcd:// takes no user or password")
	case u.Path != "" && u.Path != "/":
		return nil, fmt.Errorf("etcd:// takes no path (%s); give a key prefix as ?prefix=P", u.Path)
	case u.Host == "":
		return nil, fmt.Errorf("no endpoint; want etcd://host:port[,host:port...]")
	}
	var endpoints []string
	for _, h := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("endpoint %q; want host:port", h)
		}
		endpoints = append(endpoints, h)
	}
	return endpoints, nil
}

// reachable is an etcd Holder that first checks that some endpoint takes a
// TCP connection. etcd's client waits for a connection until its context
// ends and then reports only that; an endpoint that refuses or does not
// answer is better reported at once, with the dial's error, as the other
// stores' clients do.
type reachable struct {
	*machineid.Holder
	endpoints []string
}

func (l *reachable) holder() *machineid.Holder { return l.Holder }

// MachineID is the Holder's, once an endpoint has taken a connection.
func (l *reachable) MachineID(ctx context.Context) (int64, error) {
	if err := dialAny(ctx, l.endpoints); err != nil {
		return -1, fmt.Errorf("no etcd endpoint reachable: %w", err)
	}
	return l.Holder.MachineID(ctx)
}

// dialAny returns nil once one of endpoints takes a TCP connection, or the
// last endpoint's error if none does within dialTimeout each.
func dialAny(ctx context.Context, endpoints []string) error {
	var err error
	for _, e := range endpoints {
		d := net.Dialer{Timeout: dialTimeout}
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", e); err == nil {
			_ = c.Close()
			return nil
		}
	}
	return err
}
