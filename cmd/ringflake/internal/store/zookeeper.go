package store

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/ringflake/ringflake/machineid"
	mz "github.com/ringflake/ringflake/machineid_zookeeper"
)

// zkLease is the backend of zk:// URLs: zk://host:port[,host:port...][/path],
// a session of the Holder's own with the servers, whose nodes are under
// path (default /ringflake/machineid).
func zkLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	switch {
	case u.User != nil:
		return nil, nil, fmt.Errorf("zk:// takes no user or password")
	case u.RawQuery != "":
		return nil, nil, fmt.Errorf("zk:// takes no query parameters (%s); give the path as zk://host:port/path", u.RawQuery)
	case u.Host == "":
		return nil, nil, fmt.Errorf("no server; want zk://host:port[,host:port...][/path]")
	}
	var servers []string
	for _, h := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return nil, nil, fmt.Errorf("server %q; want host:port", h)
		}
		servers = append(servers, h)
	}
	opts := c.common()
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, mz.WithPrefix(u.Path))
	}
	l, err := mz.New(servers, opts...)
	if err != nil {
		return nil, nil, err
	}
	return l, func() {}, nil
}
