package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// redisParams are the query parameters of a redis:// URL that ringflake
// reads; the others are go-redis's.
var redisParams = []string{"prefix", "mode", "host"}

// redisLease is the backend of redis:// and rediss:// URLs: go-redis's URL
// format, a Cluster when addr= names more nodes, and the query parameters
// prefix, mode (lease or host) and host.
func redisLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	q := u.Query()
	opts := append(c.common(), mr.WithPrefix(q.Get("prefix")))
	switch mode := q.Get("mode"); {
	case mode == "host":
		opts = append(opts, mr.WithHostMapping(q.Get("host")))
	case mode != "" && mode != "lease":
		return nil, nil, fmt.Errorf("mode=%s; want lease or host", mode)
	case q.Has("host"):
		return nil, nil, fmt.Errorf("host= needs mode=host")
	}
	for _, p := range redisParams {
		q.Del(p)
	}
	rest := *u
	rest.RawQuery = q.Encode()
	client, err := redisClient(&rest)
	if err != nil {
		return nil, nil, err
	}
	svc, err := mr.New(client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return svc, func() { _ = client.Close() }, nil
}

// redisClient makes a go-redis client from u, without ringflake's query
// parameters: a ClusterClient if u names more nodes with addr=, else a
// Client. Unless u says otherwise, it gives up dialling after a second and
// retries a command once, so that an unreachable server is reported soon.
func redisClient(u *url.URL) (redis.UniversalClient, error) {
	quietRedis() // go-redis's log lines would break the one-line error rule
	q := u.Query()
	dial, retries := !q.Has("dial_timeout"), !q.Has("max_retries")
	if !q.Has("addr") {
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, err
		}
		if dial {
			o.DialTimeout = time.Second
		}
		if retries {
			o.MaxRetries = 1
		}
		return redis.NewClient(o), nil
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		return nil, fmt.Errorf("a Redis Cluster has no databases; drop /%s, or addr= for one server", db)
	}
	o, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	if dial {
		o.DialTimeout = time.Second
	}
	if retries {
		o.MaxRetries = 1
	}
	return redis.NewClusterClient(o), nil
}

// quietRedis sets go-redis's logger, a package variable, once: setting it
// for every client would race with the clients already logging.
var quietRedis = sync.OnceFunc(func() { redis.SetLogger(quietLogger{}) })

// quietLogger drops go-redis's internal log lines; failures reach the user
// as errors instead.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
